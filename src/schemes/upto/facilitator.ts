import { createHash } from 'node:crypto'
import type { Address } from 'viem'

/**
 * The facilitator an endpoint's upto requirement names: one of `facilitators` picked by a hash of
 * its resource URL, so the same for every challenge of the endpoint (challenges are built once)
 * and spread over the relayers across endpoints. Only that relayer can settle its payments.
 */
export function facilitatorFor(resourceUrl: string, facilitators: readonly Address[]): Address {
  const h = createHash('sha256').update(resourceUrl).digest().readUInt32BE(0)
  return facilitators[h % facilitators.length]!
}

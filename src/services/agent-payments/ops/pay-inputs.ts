/** What a payment row takes from the requirement it pays, and the `deposit_amount` a voucher payment may ask for. */
import type { Requirement } from '../../../client/challenge.js'
import { appError } from '../../../errors.js'
import type { AgentRow } from '../../accounts/agent-auth.js'
import type { PayBody } from '../choose-requirement.js'

/** The columns of an agent payment row that come from the requirement it pays, whatever the scheme. */
export function requirementColumns(agent: AgentRow, x402Version: number, url: URL, method: string, req: Requirement) {
  return {
    agent_id: agent.id,
    x402_version: x402Version,
    url: url.href,
    method,
    network: req.network,
    asset: req.asset.toLowerCase(),
    payer: agent.address.toLowerCase(),
    pay_to: req.payTo.toLowerCase(),
    amount: req.amount.toString(),
  }
}

/** `deposit_amount` (a decimal string of atomic units, at least the price), default 100 x the price. */
export function depositAmountOf(body: PayBody, price: bigint): bigint {
  if (body.deposit_amount === undefined) return 100n * price
  const v = body.deposit_amount
  if (typeof v !== 'string' || !/^[1-9][0-9]{0,15}$/.test(v) || BigInt(v) < price) {
    throw appError(
      'invalid_parameter',
      {
        param: 'deposit_amount',
        detail: `expected a decimal integer string of atomic USDC, at least the price ${price}`,
      },
      { details: { param: 'deposit_amount' } },
    )
  }
  return BigInt(v)
}

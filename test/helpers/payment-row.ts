import { randomBytes, randomUUID } from 'node:crypto'
import type { NewProxyPayment } from '../../src/ledger/ledger-writer.js'

const hex = (n: number) => `0x${randomBytes(n).toString('hex')}`

/** A new `exact` payment row as the proxy records it, with a fresh payer and nonce. */
export function paymentRow(over: Partial<NewProxyPayment> = {}): NewProxyPayment {
  return {
    id: randomUUID(),
    endpoint_id: null,
    resource: 'http://127.0.0.1/tollgate/toolbox/echo',
    method: 'GET',
    x402_version: 2,
    network: 'eip155:84532',
    asset: hex(20),
    payer: hex(20),
    pay_to: hex(20),
    value: 1000n,
    valid_after: 0n,
    valid_before: 1_900_000_000n,
    nonce: hex(32),
    signature: hex(65),
    settlement_mode: 'async',
    ...over,
  }
}

import type { PaymentReceipt } from '../seam/types.js'
import type { SettlementResponse } from '../x402/types.js'

/**
 * A served payment's receipt as x402's settle response, the same on every transport (HTTP's
 * `PAYMENT-RESPONSE`, MCP's `_meta["x402/payment-response"]`, A2A's `x402.payment.receipts`),
 * carrying the scheme's own settle fields in `extra` (batch-settlement: the channel's state its
 * client tracks).
 */
export function settlementResponseOf(r: PaymentReceipt, network: string): SettlementResponse {
  return {
    success: true,
    transaction: r.transaction,
    network,
    payer: r.payer,
    paymentId: r.paymentId,
    ...(r.amount === undefined ? {} : { amount: r.amount }),
    ...(r.extra === undefined ? {} : { extra: r.extra }),
  }
}

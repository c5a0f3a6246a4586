/**
 * The success header of a paid response: `PAYMENT-RESPONSE` (v2) or `X-PAYMENT-RESPONSE`
 * (v1), standard base64 of the settlement JSON, as the official clients decode it
 * (`decodePaymentResponseHeader` / `decodeXPaymentResponse`).
 */
import type { SettlementResponse } from './types.js'

/** Header name for the payment-response of a request paid with x402 `version`. */
export function paymentResponseHeaderName(version: 1 | 2): 'PAYMENT-RESPONSE' | 'X-PAYMENT-RESPONSE' {
  return version === 2 ? 'PAYMENT-RESPONSE' : 'X-PAYMENT-RESPONSE'
}

/**
 * @example
 *   reply.header(paymentResponseHeaderName(2), encodePaymentResponse({ success: true, transaction: '', network: 'eip155:84532', payer, paymentId }))
 */
export function encodePaymentResponse(response: SettlementResponse): string {
  const out: SettlementResponse = {
    success: response.success,
    transaction: response.transaction,
    network: response.network,
    payer: response.payer,
  }
  // optional members are omitted rather than sent as null/undefined
  if (response.errorReason !== undefined) out.errorReason = response.errorReason
  if (response.paymentId !== undefined) out.paymentId = response.paymentId
  if (response.amount !== undefined) out.amount = response.amount
  if (response.extra !== undefined) out.extra = response.extra
  return Buffer.from(JSON.stringify(out)).toString('base64')
}

import type { PaymentInfo } from './payment-info.js'

/** A payment the wrapper did not make or the seller did not take; `code` is machine-readable. */
export class PaymentRefusedError extends Error {
  constructor(
    /** seller_not_allowed | spend_cap_exceeded | insufficient_balance | unsupported_requirements | invalid_challenge | payment_rejected | ... */
    readonly code: string,
    message: string,
    /** the platform's error body fields (e.g. cap, remaining) or the seller's refusal */
    readonly details: Record<string, unknown> = {},
    /** HTTP status of the platform's answer, or of the seller's on payment_rejected */
    readonly status?: number,
    /** the seller's 402 on payment_rejected */
    readonly response?: Response,
  ) {
    super(message)
    this.name = 'PaymentRefusedError'
  }
}

/**
 * The paid retry never got an answer (connection refused or reset, DNS, TLS) after a payment was
 * signed: the seller may have received it and may settle it. `payment` names it (with
 * `agentPaymentId` when the platform signed it, for `GET /v1/agent/payments/{id}`, and `payer` and
 * `nonce`, for `lookupPayment` at a Tollgate seller); `cause` is the fetch error. An aborted retry
 * throws the AbortError itself.
 */
export class PaidCallFailedError extends Error {
  constructor(
    readonly payment: PaymentInfo,
    cause: unknown,
  ) {
    super(`the call failed after a payment was signed: ${(cause as Error)?.message ?? String(cause)}`, { cause })
    this.name = 'PaidCallFailedError'
  }
}

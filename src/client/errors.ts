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

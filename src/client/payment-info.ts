// What a paid call's response carries about its payment (`res.payment`); apart from wrap-fetch.ts
// so that the errors, which carry it too, need not import the wrapper.
/** The decoded `PAYMENT-RESPONSE` / `X-PAYMENT-RESPONSE` plus what was paid. */
export interface PaymentInfo {
  success: boolean
  /**
   * the settlement transaction hash; absent while the seller settles asynchronously (Tollgate's
   * proxy settles in batches after answering): `GET /v1/agent/payments/{agentPaymentId}` shows it
   * once settled
   */
  transaction?: string
  network: string
  payer: string
  /** the seller platform's payment id, when it sends one */
  paymentId?: string
  /** Tollgate's id of the payment it signed (platform mode) */
  agentPaymentId?: string
  /** the authorization's nonce: with `payer`, what `lookupPayment` asks a Tollgate seller about when no answer came */
  nonce?: string
  amount: string
  payTo: string
  /** the payment header sent: `X-PAYMENT` unless the server offered x402 v2 alone or declared `payment-identifier` */
  header: 'X-PAYMENT' | 'PAYMENT-SIGNATURE'
  /** the x402 `payment-identifier` the payment carried, when the server declared the extension */
  paymentIdentifier?: string
  /** the answer was lost once and asked for again with the same payment and id */
  retried?: boolean
  /** `exact` (a transfer authorization) or `deferred` (a voucher) */
  scheme: string
  /** the voucher signed (deferred): its id, nonce and everything it owes the seller so far */
  voucher?: { id: string; nonce: string; valueAggregate: string }
  /** what the payment deposited into the escrow (deferred, atomic units), when it did */
  deposit?: string
  /** upto: the maximum signed; `amount` is the actual charge the seller's receipt states (the maximum when it states none) */
  maxAmount?: string
}

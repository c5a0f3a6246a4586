/**
 * `tollgate/client`: pay x402 endpoints from code.
 *
 * @example
 *   import { wrapFetch, PaymentRefusedError } from 'tollgate/client'
 *   const pay = wrapFetch(fetch, { baseUrl: 'http://localhost:4020', agentKey: process.env.TOLLGATE_AGENT_KEY! })
 */
export {
  wrapFetch,
  decodePaymentResponse,
  type WrapFetchOptions,
  type PlatformPayOptions,
  type LocalPayOptions,
  type PaymentInfo,
  type PaidResponse,
  type PaidFetch,
  type SignInMode,
  type SignInInfo,
  type FetchLike,
} from './client/wrap-fetch.js'
export { PaymentRefusedError, PaidCallFailedError } from './client/errors.js'
export type { SpendLimits } from './client/spend-limits.js'
export { lookupPayment, type PaymentLookup } from './client/lookup-payment.js'
export { parseChallenge, ChallengeError, type ParsedChallenge, type Requirement } from './client/challenge.js'
export {
  verifyWebhook,
  WebhookSignatureError,
  type VerifyWebhookOptions,
  type WebhookEvent,
} from './client/verify-webhook.js'

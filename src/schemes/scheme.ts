/**
 * The payment-scheme seam. A paid call runs the same stages whatever the scheme (see
 * src/proxy/paid-call/); a scheme supplies what differs:
 *
 * - `verify`: the payload is well formed, fits what the endpoint asks (amount, recipient, network,
 *   validity window) and is signed by the payer — locally, no reservation yet;
 * - `reserve`: its replay guard and the payer's credit, taken atomically; the reservation has one
 *   `release()`;
 * - `row`: what the ledger records for it (`payments`, with the scheme's name);
 * - settlement runs in the worker role (exact: src/services/settlement/), keyed by `payments.scheme`.
 *
 * `exact` (EIP-3009 transferWithAuthorization) is the first implementation (src/schemes/exact/);
 * `deferred` (vouchers) and `upto` (Permit2, usage-based prices) follow.
 * docs/architecture.md ("Schemes and transports") states the contract for new ones.
 */
import type { FastifyBaseLogger } from 'fastify'
import type { SchemeOffer } from '../proxy/endpoint-table.js'
import type { NewProxyPayment } from '../ledger/ledger-writer.js'
import type { CallRefusal } from '../proxy/paid-call/refusal.js'
import type { Challenge } from '../x402/challenge.js'
import type { PaymentEnvelope } from '../x402/decode-payment.js'
import type { PaymentRequirementsV2 } from '../x402/types.js'

import type { SchemeName } from './names.js'

export type { SchemeName }

/** A payment that passed `verify`: who pays what, and how the ledger will know it. */
export interface VerifiedPayment {
  readonly scheme: SchemeName
  /** x402 version of the payment header (1 or 2); the receipt goes back in the same generation */
  readonly version: 1 | 2
  /** lower-case payer address */
  readonly payer: `0x${string}`
  /** lower-case asset address */
  readonly asset: `0x${string}`
  /** atomic units reserved for the call */
  readonly value: bigint
  /** lower-case 32-byte hex; unique per payer */
  readonly nonce: string
  /** unix seconds after which the payment can no longer be settled */
  readonly validBefore: number
  /**
   * settled by the scheme's own job after the call, never before it is answered (deferred: the
   * voucher is collected later), whatever the endpoint's settlement mode
   */
  readonly settledLater?: boolean
  /**
   * `upto`: `value` is the maximum reserved; the call's actual charge (≤ it) is known once it
   * answered, and the pipeline records that (src/proxy/paid-call/charge.ts)
   */
  readonly usageBased?: boolean
  /** the row the ledger records (the pipeline adds id, endpoint, resource, method, mode) */
  readonly ledgerFields: Pick<
    NewProxyPayment,
    | 'scheme'
    | 'x402_version'
    | 'network'
    | 'asset'
    | 'payer'
    | 'pay_to'
    | 'value'
    | 'valid_after'
    | 'valid_before'
    | 'nonce'
    | 'signature'
    | 'max_value'
    | 'facilitator'
    | 'voucher'
    | 'channel'
  >
}

/** A payment's hold on the payer's credit and its nonce, from `reserve` until the call's outcome. */
export interface Reservation {
  /**
   * The payer is blocked from unsettled credit (a settlement of theirs failed): the payment must be
   * settled before the call is answered, and that success lifts the block.
   */
  readonly settleFirst: boolean
  /**
   * Marks the payment recorded in the ledger: from then on the row holds the nonce, so `release`
   * gives back only the credit.
   */
  recorded(): void
  /**
   * Gives the reservation back: the credit always, and the nonce too while the payment is not
   * recorded (the same payment may then be sent again). Idempotent; never rejects.
   */
  release(): Promise<void>
  /**
   * `upto`: the call cost `value` (≤ what was reserved): the difference goes back to the payer's
   * credit now. Idempotent; never rejects.
   */
  charged?(value: bigint): Promise<void>
  /**
   * `batch-settlement`: fields its payment row carries once reserved (the channel's charge, written
   * with the row by the ledger's group commit).
   */
  readonly rowFields?: Pick<NewProxyPayment, 'channel'>
  /**
   * `batch-settlement`: the call was served and its row committed (`moved`: the channel's charge
   * went with it; else, a record-first call, it moves now): the scheme's state follows, and what
   * the receipt says of it comes back. Never rejects.
   */
  served?(charged: bigint, moved: boolean): Promise<ReceiptPart>
}

/** What a scheme adds to a served call's receipt (`PAYMENT-RESPONSE`). */
interface ReceiptPart {
  transaction?: string
  amount?: string
  extra?: Record<string, unknown>
}

export interface VerifyContext {
  /** unix ms of the call */
  nowMs: number
  /** how long the call may run (ms): the payment must stay valid past it and its settlement */
  callMs: number
  log: FastifyBaseLogger
}

export interface PaymentScheme {
  readonly name: SchemeName
  /** its v2 requirement for an endpoint and method (exact's is built into the challenge) */
  requirement?(offer: SchemeOffer): PaymentRequirementsV2 | undefined
  /** the requirement for one buyer, named unauthenticated by the request (deferred: `PAYER-IDENTIFIER`) */
  forPayer?(
    requirement: PaymentRequirementsV2,
    payer: `0x${string}`,
    log: FastifyBaseLogger,
  ): Promise<PaymentRequirementsV2>
  /** reads its payload from the envelope and checks it against the challenge and its signature; no state is touched */
  verify(payment: PaymentEnvelope, challenge: Challenge, ctx: VerifyContext): Promise<VerifiedPayment | CallRefusal>
  /** takes the replay guard and the payer's credit; on refusal nothing is held */
  reserve(payment: VerifiedPayment, ctx: VerifyContext): Promise<Reservation | CallRefusal>
  close?(): Promise<void>
}

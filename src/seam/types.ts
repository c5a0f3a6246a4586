/**
 * The seam's contract: the types proxy, schemes and transports share, below all three (as
 * `@x402/core/types` is below its mechanisms). A paid call is a `CallRequest` a transport hands
 * over; it ends as a `CallResult` (an answer with its receipt, or a `CallRefusal`) the transport
 * renders; in between, each `PaymentScheme` verifies, reserves and settles its payments.
 * docs/schemes/README.md describes how schemes and their settlement fit together.
 */
import type { IncomingHttpHeaders } from 'node:http'
import type { Readable } from 'node:stream'
import type { FastifyBaseLogger } from 'fastify'
import type { AppError } from '../errors.js'
import type { NewProxyPayment } from '../ledger/ledger-writer.js'
import type { Challenge } from '../x402/challenge.js'
import type { PaymentEnvelope, PaymentHeaders } from '../x402/decode-payment.js'
import type { ReasonCode, Refusal } from '../x402/reasons.js'
import type { PaymentRequirementsV2 } from '../x402/types.js'
import type { Address, Hex, Log, PublicClient, TransactionReceipt } from 'viem'
import type { Payment } from '../db/database.js'

// ---- scheme names (src/schemes/names.ts re-exports them) ----

/**
 * The payment schemes this platform implements, by their x402 names. An endpoint offers `exact`
 * always and any of the others its seller enabled (`endpoints.schemes`). Adding a scheme: its name
 * here, its implementation under src/schemes/<name>/, and its instance in the proxy's scheme list
 * (src/http/proxy-app.ts).
 *
 * `deferred` (src/schemes/deferred/) is offered only where DEFERRED_ESCROW_ADDRESS names an escrow;
 * `upto` (src/schemes/upto/) only where UPTO_SCHEME is on and our relayers settle;
 * `batch-settlement` (src/schemes/batch-settlement/) where BATCH_SETTLEMENT is on, and by default on
 * the platform's own hosted endpoints (namespace `tollgate`).
 */
export const SCHEME_NAMES = ['exact', 'deferred', 'upto', 'batch-settlement'] as const

export type SchemeName = (typeof SCHEME_NAMES)[number]

export function isSchemeName(v: unknown): v is SchemeName {
  return typeof v === 'string' && (SCHEME_NAMES as readonly string[]).includes(v)
}

// ---- the call, as a transport hands it over and gets it back ----

/** A paid request, whatever carried it. */
export interface CallRequest {
  /** `/<namespace>/<service>/<slug>` */
  path: string
  /** the method as received (HEAD included) */
  method: string
  /** the payment as the transport carries it; undefined when none was sent */
  payment: PaymentHeaders | undefined
  /** an x402 `sign-in-with-x` proof as the SIGN-IN-WITH-X header carries it (base64 JSON); undefined when none was sent */
  signIn?: string
  /** hosted input already parsed by the transport (MCP tool arguments); else query or body below */
  input?: Record<string, unknown>
  query: Record<string, unknown>
  /** the raw body (hosted handlers parse JSON themselves, upstreams get the bytes as sent) */
  body: Buffer | undefined
  headers: IncomingHttpHeaders
  /** path and query as received (the upstream gets the query) */
  url: string
  log: FastifyBaseLogger
}

/** What the buyer is told about its payment when the call succeeded. */
export interface PaymentReceipt {
  paymentId: string
  payer: string
  /** x402 generation of the payment header: the receipt goes back in the same one */
  version: 1 | 2
  /** the settlement transaction, '' while it is pending (async settlement) */
  transaction: string
  /** `upto`: the actual charge in atomic units (≤ the maximum signed for) */
  amount?: string
  /** `batch-settlement`: the receipt's `extra` (chargedAmount, channelState) */
  extra?: Record<string, unknown>
}

export type CallResult =
  /** refused before the endpoint answered; `challenge` present when the transport should send it again */
  | { kind: 'refused'; refusal: CallRefusal; challenge?: Challenge }
  /** the endpoint's own answer; `receipt` only when the payment was kept (status < 400) */
  | {
      kind: 'answer'
      status: number
      contentType?: string
      headers?: Record<string, string | string[]>
      body: Buffer | string | Readable
      receipt?: PaymentReceipt
    }

/**
 * Why a paid call stops before its endpoint answers: the one refusal every stage returns, rendered
 * in one place by the transport (HTTP: a 402 with the challenge again, or the catalogue error).
 *
 * - `challenge`: no payment was sent: the buyer gets the challenge.
 * - `payment`: the payment itself is refused (an x402 reason): the buyer gets the challenge again
 *   with the reason and may sign a new payment.
 * - `error`: anything else (bad input, busy, not recorded, the endpoint failed): a catalogue error.
 */
export class CallRefusal {
  private constructor(
    readonly reason: ReasonCode | undefined,
    readonly message: string | undefined,
    readonly error: AppError | undefined,
    /**
     * a corrective 402 (`batch-settlement`'s stale cumulative amount): the challenge's requirement
     * of `scheme` carries these `extra` members too (channelState, voucherState)
     */
    readonly corrective?: { scheme: string; extra: Record<string, unknown> },
  ) {}

  /** no payment was sent: the plain challenge */
  static challenge(): CallRefusal {
    return new CallRefusal(undefined, undefined, undefined)
  }

  static payment(reason: ReasonCode, message?: string): CallRefusal {
    return new CallRefusal(reason, message, undefined)
  }

  /** an x402 module's refusal (decode, requirements) as a payment refusal */
  static fromX402(r: Refusal): CallRefusal {
    return new CallRefusal(r.reason, r.message, undefined)
  }

  /** a payment refusal whose challenge tells the buyer the state to resync from */
  static corrective(r: Refusal, scheme: string, extra: Record<string, unknown>): CallRefusal {
    return new CallRefusal(r.reason, r.message, undefined, { scheme, extra })
  }

  static error(error: AppError): CallRefusal {
    return new CallRefusal(undefined, undefined, error)
  }
}

export const isRefusal = (v: unknown): v is CallRefusal => v instanceof CallRefusal

// ---- the transport seam ----

/**
 * The transport seam: how a challenge, a payment and a receipt travel between buyer and proxy.
 * The paid call's stages (src/proxy/paid-call/) never see the carrier; a transport turns what it
 * receives into a `CallRequest` and renders the `CallResult`:
 *
 * | | HTTP (`http.ts`) | MCP (`mcp.ts`) |
 * |---|---|---|
 * | challenge | 402 + v1 JSON body + v2 `PAYMENT-REQUIRED` header | tool result, `isError`, PaymentRequired in `structuredContent` |
 * | payment | `PAYMENT-SIGNATURE` (v2) / `X-PAYMENT` (v1) header | `params._meta["x402/payment"]` |
 * | receipt | `PAYMENT-RESPONSE` / `X-PAYMENT-RESPONSE` header | `_meta["x402/payment-response"]` |
 * | sign-in proof | `SIGN-IN-WITH-X` header | `params._meta["sign-in-with-x"]` (Tollgate's binding) |
 *
 * docs/architecture.md ("Schemes and transports") states the contract.
 */
export interface PaymentTransport<In, Out, Sent = unknown> {
  readonly name: string
  /** the call as the stages see it: endpoint path, input, the payment as carried */
  request(input: In): CallRequest
  /** renders a result: the endpoint's answer with its receipt, a challenge (with a reason), or an error */
  send(out: Out, result: CallResult): Sent
}

// ---- the payment-scheme seam ----

/** What a scheme other than exact needs to state its requirement for one endpoint and method. */
export interface SchemeOffer {
  scheme: string
  method: string
  resourceUrl: string
  payTo: `0x${string}`
  /** atomic units */
  amount: bigint
  maxTimeoutSeconds: number
}

/**
 * The payment-scheme seam. A paid call runs the same stages whatever the scheme (see
 * src/proxy/paid-call/); a scheme supplies what differs:
 *
 * - `verify`: the payload is well formed, fits what the endpoint asks (amount, recipient, network,
 *   validity window) and is signed by the payer — locally, no reservation yet;
 * - `reserve`: its replay guard and the payer's credit, taken atomically; the reservation has one
 *   `release()`;
 * - `ledgerFields` (of the verified payment): what the ledger records for it (`payments`, with the
 *   scheme's name);
 * - `settlement`: how its payments settle after the call, in the worker role (`SchemeSettlement`
 *   below), found by `payments.scheme` (src/schemes/settlements.ts);
 * - `operate` (optional): a payment that pays for no call (`VerifiedPayment.operation`, e.g.
 *   batch-settlement's cooperative refund) is carried out in place of the call and answered with
 *   its own receipt; nothing is reserved, served or recorded as a payment.
 *
 * `exact` (EIP-3009 transferWithAuthorization) is the first implementation (src/schemes/exact/);
 * `deferred` (vouchers) and `upto` (Permit2, usage-based prices) follow.
 * docs/architecture.md ("Schemes and transports") states the contract for new ones.
 */

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
  /**
   * a payment operation, not a paid request (`batch-settlement`'s cooperative `refund`): the
   * scheme's `operate` carries it out instead of the call; nothing is reserved, served, charged or
   * recorded as a payment
   */
  readonly operation?: boolean
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

/** What a payment operation answers (HTTP: the status, the JSON body, the receipt in `PAYMENT-RESPONSE`). */
export interface OperationAnswer {
  status: number
  body: Record<string, unknown>
  receipt: PaymentReceipt
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
  /** carries out a payment operation (`VerifiedPayment.operation`) in place of the call: its answer and receipt */
  operate?(payment: VerifiedPayment, ctx: VerifyContext): Promise<OperationAnswer | CallRefusal>
  /** how its payments settle after the call (the worker role reads it from src/schemes/settlements.ts) */
  readonly settlement?: SchemeSettlement
  close?(): Promise<void>
}

// ---- settlement, per scheme ----

/**
 * How a chain takes a scheme's settlement calls: in the settler's Multicall3 batches, one
 * transaction per payment (the upto reference proxy accepts no other caller than the facilitator),
 * or not at all (its contract is not deployed: the payments wait).
 */
export type SettlementPath = 'batch' | 'direct' | 'absent'

/** What a search of the chain found of one payment's authorization. */
export type AuthorizationOutcome = { kind: 'used'; txHash: Hex } | { kind: 'canceled' } | { kind: 'unknown' }

/** The block range a search covers, resolved by the caller (src/services/settlement/chain-ops.ts). */
interface BlockSearch {
  fromBlock: bigint
  toBlock: bigint
  /** blocks per eth_getLogs request: RPC providers cap the range of one request */
  chunk: bigint
}

/** A multicall read, and how its answer says the authorization is used. */
interface UsedQuery {
  contract: { address: Address; abi: readonly unknown[]; functionName: string; args: readonly unknown[] }
  used(result: unknown): boolean
}

/**
 * A scheme whose payments our relayers settle one authorization each (exact, upto): the settler
 * (src/services/settlement/) claims served payments, asks each one's scheme for its call and
 * decides its fate from receipts and logs through these members, never by the scheme's name.
 */
export interface RelayerSettlement {
  readonly kind: 'relayer'
  readonly scheme: SchemeName
  /** the call that settles p (`asset`: the batch's token) */
  call(p: Payment, asset: string): { target: Address; callData: Hex }
  /** the read (through Multicall3) that says whether p's authorization is used */
  usedQuery(p: Payment, asset: string): UsedQuery
  /** `authorizer:nonce` keys (authorizationKey) of this scheme's authorizations a receipt's logs show used */
  usedInLogs(asset: string, logs: Log[]): Set<string>
  /** whether a mined transaction settled p without a log naming its authorization (upto's direct path) */
  settledWithoutLog?(p: Payment, receipt: TransactionReceipt): boolean
  /** what became of p's authorization, searched in the logs of `range` (oldest first) */
  findOutcome(client: PublicClient, asset: string, p: Payment, range: BlockSearch): Promise<AuthorizationOutcome>
  /** how this chain takes the scheme's calls (read once per settler) */
  path(client: Pick<PublicClient, 'getCode'>): Promise<SettlementPath>
  /**
   * the scheme's payments are pinned to one relayer each (upto: the witness's facilitator,
   * lower-case; a payment naming none is settled by none), with the requeue reason of a payment
   * claimed by another relayer; absent: any relayer settles them
   */
  readonly pinned?: { relayerOf(p: Payment): string | null; otherRelayerReason: string }
  /** the requeue reason of payments whose path is `absent` */
  readonly absentReason?: string
  /** the log lines the settler writes once it knows the path */
  describePath?(path: SettlementPath): { level: 'info' | 'error'; msg: string; extra?: Record<string, unknown> }
}

/**
 * A scheme settled by its own worker (deferred: src/services/deferred-collect/; batch-settlement:
 * src/services/batch-claim/): the relayers' settler leaves its payments alone.
 */
interface WorkerSettlement {
  readonly kind: 'worker'
  readonly scheme: SchemeName
  /** the worker job that settles it */
  readonly worker: string
}

export type SchemeSettlement = RelayerSettlement | WorkerSettlement

/** The key of an authorization in `usedInLogs`: authorizer and nonce, lower-case. */
export const authorizationKey = (authorizer: string, nonce: string) =>
  `${authorizer.toLowerCase()}:${nonce.toLowerCase()}`

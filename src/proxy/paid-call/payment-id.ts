import { createHash } from 'node:crypto'
import type { FastifyBaseLogger } from 'fastify'
import { appError } from '../../errors.js'
import { CHARGED_STATUSES } from '../../ledger/statuses.js'
import type { PaymentIdentifierStore, StoredAnswer, UsedPaymentId } from '../../db/payment-identifier-store.js'
import type { IdClaim, IdRelease } from '../../ledger/ledger-writer.js'
import type { CallRequest, CallResult, CallTarget, ResolvedCall } from './call.js'
import type { EndpointAnswer } from './dispatch.js'
import type { CheckedPayment } from './check-payment.js'
import { CallRefusal } from './refusal.js'

/** A `payment-identifier` held for one call, from its claim until `release`. */
export interface PaymentIdClaim {
  payer: string
  id: string
  /** the payment of this call (its ledger row's id) */
  paymentId: string
  fingerprint: string
  /** the release written with the call's outcome (`foldedRelease`); `released` once that write applied it */
  folded?: IdRelease
  /** a record-first call's claim, written with its `verified` row (`deferredClaim`); `claimed` once it went in */
  pending?: IdClaim
}

/** What a used id decides for a new call under it. */
type Decision = 'conflict' | 'in-progress' | 'served' | 'free'

const SERVED: ReadonlySet<string> = new Set(CHARGED_STATUSES)

/**
 * The x402 `payment-identifier` rules (specs/extensions/payment_identifier.md) for an id already used:
 * a different request under it is a conflict; a call still running (leased, or recorded `verified`)
 * is in progress; a served call is answered again, never run again; a call that ended without a
 * charge (voided, failed, never written) or an id past its retention leaves the id free for a new payment.
 */
export function decide(used: UsedPaymentId, fingerprint: string): Decision {
  if (used.expired) return 'free'
  if (used.fingerprint !== fingerprint) return 'conflict'
  // served with its lease still on: the answer is being kept right now
  if (used.status !== null && SERVED.has(used.status)) return used.leased ? 'in-progress' : 'served'
  if (used.status === 'verified') return 'in-progress'
  if (used.status === 'voided' || used.status === 'failed') return 'free'
  return used.leased ? 'in-progress' : 'free'
}

/**
 * What binds an id to its request (the spec's "request binding"): the endpoint, method, path and
 * query, the input, and the payment's terms (scheme, network, asset, amount, payee), not its
 * signature or nonce, so a client that signs afresh for the retry is the same request.
 */
export function requestFingerprint(call: ResolvedCall, req: CallRequest, checked: CheckedPayment): string {
  const f = checked.payment.ledgerFields
  const input = req.input !== undefined ? JSON.stringify(req.input) : (req.body ?? Buffer.alloc(0))
  const h = createHash('sha256')
  h.update(
    JSON.stringify([
      call.entry.id,
      call.method,
      req.url,
      checked.payment.scheme,
      f.network,
      f.asset,
      f.pay_to,
      String(f.value),
    ]),
  )
  h.update('\0')
  h.update(input)
  return h.digest('hex')
}

/**
 * Stage 3b, between checkPayment and reserve: a paid call that carries a `payment-identifier`
 * claims it for its payment, or is answered from what the id already did — the kept answer with
 * its receipt, or a refusal (409: conflict, in progress, served without a kept answer) — without
 * reserving or charging anything. `release` ends the claim when the call ends, keeping a small
 * hosted answer for retries.
 */
export function createPaymentIdStage(opts: { store: PaymentIdentifierStore; answerMaxBytes: number }) {
  const { store } = opts

  async function claim(
    call: ResolvedCall,
    req: CallRequest,
    checked: CheckedPayment,
    target: CallTarget,
    paymentId: string,
  ): Promise<PaymentIdClaim | CallResult | CallRefusal | undefined> {
    const id = checked.paymentIdentifier
    if (id === undefined) return undefined
    const payer = checked.payment.payer
    const fingerprint = requestFingerprint(call, req, checked)
    const leaseMs = leaseFor(target)
    try {
      return await claimOrAnswer(store, payer, id, fingerprint, paymentId, leaseMs, checked, target)
    } catch (err) {
      // nothing is held yet: fail closed, as a payment that cannot be recorded
      req.log.error({ err: (err as Error).message }, 'payment-identifier claim failed')
      return CallRefusal.error(appError('payment_not_recorded'))
    }
  }

  /**
   * Ends the claim: keeps a served hosted answer of at most answerMaxBytes, else only the outcome.
   * Nothing to do when the outcome's write released it already.
   */
  async function release(
    c: PaymentIdClaim,
    result: CallResult | undefined,
    target: CallTarget,
    log: FastifyBaseLogger,
  ): Promise<void> {
    if (c.folded?.released) return
    const answer = answerToKeep(result, target, opts.answerMaxBytes)
    // on failure the lease runs out by itself: until then a retry hears "in progress"
    await store
      .release(c.payer, c.id, c.paymentId, answer)
      .catch((err) => log.error({ err: (err as Error).message }, 'payment-identifier release failed'))
  }

  return {
    claim,
    release,
    deferredClaim: deferredClaim.bind(null, store.retentionSeconds),
    foldedRelease: foldedRelease.bind(null, store.retentionSeconds, opts.answerMaxBytes),
  }
}

/**
 * A record-first call's claim, to write in the statement that records its payment `verified`
 * (record.ts), so the common call costs no statement of its own; no I/O here. When the id turns
 * out used, the call goes through `claim` instead.
 */
function deferredClaim(
  keepSeconds: number,
  call: ResolvedCall,
  req: CallRequest,
  checked: CheckedPayment,
  target: CallTarget,
  paymentId: string,
): PaymentIdClaim | undefined {
  const id = checked.paymentIdentifier
  if (id === undefined) return undefined
  const payer = checked.payment.payer
  const fingerprint = requestFingerprint(call, req, checked)
  const pending = { payer, id, fingerprint, leaseMs: leaseFor(target), keepSeconds }
  return { payer, id, paymentId, fingerprint, pending }
}

/**
 * The release to write in the statement of the call's outcome (finish.ts), given the answer that
 * leaves with a receipt: the lease ends there, with no statement or commit of its own.
 */
function foldedRelease(keepSeconds: number, answerMaxBytes: number, c: PaymentIdClaim, target: CallTarget) {
  return (answer: EndpointAnswer | undefined): IdRelease => {
    c.folded = {
      payer: c.payer,
      id: c.id,
      fingerprint: c.fingerprint,
      keepSeconds,
      answer: answer && bodyToKeep(answer, target, answerMaxBytes),
    }
    return c.folded
  }
}

/** A claim's lease: it outlives the call's own limit, so only a proxy that died leaves it to run out. */
const leaseFor = (target: CallTarget) => target.timeoutMs + 60_000

/**
 * Claims the id for this call's payment, or answers from what the id already did: a used id that
 * is free is taken over, and looked at again (up to 3 times) when another call took it first.
 */
async function claimOrAnswer(
  store: PaymentIdentifierStore,
  payer: string,
  id: string,
  fingerprint: string,
  paymentId: string,
  leaseMs: number,
  checked: CheckedPayment,
  target: CallTarget,
): Promise<PaymentIdClaim | CallResult | CallRefusal> {
  for (let attempt = 0; attempt < 3; attempt++) {
    const r = await store.claim(payer, id, fingerprint, paymentId, leaseMs)
    if (r.claimed) return { payer, id, paymentId, fingerprint }
    const decision = decide(r.used, fingerprint)
    if (decision === 'free') {
      if (await store.takeOver(payer, id, r.used.paymentId, fingerprint, paymentId, leaseMs))
        return { payer, id, paymentId, fingerprint }
      continue // another call took it first: look again
    }
    return answerFor(decision, r.used, id, checked, target)
  }
  return CallRefusal.error(inProgress(id))
}

/** The answer a released claim keeps: a served hosted answer with a receipt, of at most maxBytes. */
function answerToKeep(result: CallResult | undefined, target: CallTarget, maxBytes: number): StoredAnswer | undefined {
  return result?.kind === 'answer' && result.receipt ? bodyToKeep(result, target, maxBytes) : undefined
}

/** A hosted answer's status, type and body (a string or bytes, not a stream) when at most maxBytes. */
function bodyToKeep(
  answer: { status: number; contentType?: string; body: unknown },
  target: CallTarget,
  maxBytes: number,
): StoredAnswer | undefined {
  if (target.kind !== 'hosted' || !(typeof answer.body === 'string' || Buffer.isBuffer(answer.body))) return undefined
  const body = typeof answer.body === 'string' ? Buffer.from(answer.body) : answer.body
  return body.length <= maxBytes ? { status: answer.status, contentType: answer.contentType, body } : undefined
}

function answerFor(
  decision: Exclude<Decision, 'free'>,
  used: UsedPaymentId,
  id: string,
  checked: CheckedPayment,
  target: CallTarget,
): CallResult | CallRefusal {
  if (decision === 'conflict') return CallRefusal.error(appError('payment_identifier_conflict', { id }))
  if (decision === 'in-progress') return CallRefusal.error(inProgress(id))
  const receipt = {
    paymentId: used.paymentId,
    payer: checked.payment.payer,
    version: checked.payment.version,
    transaction: used.transaction ?? '',
  }
  if (used.answer) {
    const { status, contentType, body } = used.answer
    return {
      kind: 'answer',
      status,
      ...(contentType ? { contentType } : {}),
      headers: { 'x-tollgate-replayed': 'true' },
      body,
      receipt,
    }
  }
  const why =
    target.kind === 'upstream'
      ? "a seller upstream's answers are not kept"
      : 'it was larger than the proxy keeps, or the proxy stopped before keeping it'
  return CallRefusal.error(
    appError(
      'payment_identifier_served',
      { id, why, paymentId: used.paymentId },
      {
        details: {
          paymentId: used.paymentId,
          transaction: used.transaction,
          lookup: `/_tollgate/payments/${used.paymentId}`,
        },
      },
    ),
  )
}

const inProgress = (id: string) =>
  appError('payment_identifier_in_progress', { id }, { headers: { 'retry-after': '1' } })

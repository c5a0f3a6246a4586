/**
 * A paid call as named stages, each handing on or refusing (the way Fastify's handle-request.js
 * reads):
 *
 *   resolveEndpoint → parseInput → checkPayment → (paymentId) → reserve → record → dispatch → finish
 *
 * A call that carries an x402 `payment-identifier` claims it before anything is reserved (a retry
 * of a served call is answered from it, charged nothing) and releases it when it ends (payment-id.ts).
 *
 * On an endpoint with paid access (x402 `sign-in-with-x`), a call without a payment may carry a
 * SIGN-IN-WITH-X proof instead (`req.signIn`, however the transport carried it): resolveEndpoint →
 * parseInput → signIn → rate limit → dispatch, no payment anywhere (sign-in.ts); a served one is
 * recorded in `access_uses` (the history's `sign_in` entries, amount 0) before its answer leaves.
 * A served payment there grants its payer the access (`grantAccess`).
 *
 * Every stage returns its result or a CallRefusal; the transport renders refusals and answers in
 * one place. Whatever is held (the payment's reservation) has one `release()`, which `finish`
 * calls for a call that was not served — and the catch below for anything unexpected.
 *
 * One durable write per hosted call: its payment is recorded after the handler answered, as
 * `served` (or `voided`), and the answer leaves only once that write is committed. A call that dies
 * with its process before the write leaves no row: nothing is charged. Record-first where it buys
 * something: an upstream call is recorded `verified` before it is forwarded (the seller's origin
 * receives the payment id), and so is a hosted handler with `effects` (mail sent, a request made),
 * so nothing acts for a payment that could not be recorded.
 */
import { randomUUID } from 'node:crypto'
import { appError } from '../../errors.js'
import type { AccessGrantWrite, LedgerWriter } from '../../ledger/ledger-writer.js'
import type { SettleNow } from '../../ledger/settle-now.js'
import type { FixedWindowLimiter } from '../../limits/fixed-window.js'
import type { HandlerPool } from '../../pool/handler-pool.js'
import type { PaymentScheme } from '../../schemes/scheme.js'
import type { EndpointTable } from '../endpoint-table.js'
import type { UpstreamClient } from '../upstream.js'
import type { PaymentIdentifierStore } from '../../db/payment-identifier-store.js'
import { SIGN_IN_SERVED_KEY, type AccessGrantStore } from '../../db/access-grant-store.js'
import type { UpstreamMcpClient } from '../upstream-mcp.js'
import type { UpstreamA2aClient } from '../upstream-a2a.js'
import type { CallRequest, CallResult, CallTarget, ResolvedCall } from './call.js'
import { createPaymentChecker, type CheckedPayment } from './check-payment.js'
import { createDispatcher } from './dispatch.js'
import { createFinisher } from './finish.js'
import { createInputParser, type InputSettings } from './parse-input.js'
import { createPayerChallenge } from './payer-challenge.js'
import { createPaymentIdStage, type PaymentIdClaim } from './payment-id.js'
import { paymentRow, recordPayment } from './record.js'
import { CallRefusal } from './refusal.js'
import { createReserver, rateLimit } from './reserve.js'
import { createSignInStage, type SignInDeps } from './sign-in.js'
import { resolveEndpoint } from './resolve-endpoint.js'
import type { PaidCallHooks } from './test-hooks.js'
import type { Challenge } from '../../x402/challenge.js'
import { refuse } from '../../x402/reasons.js'

export interface PaidCallDeps extends InputSettings {
  table: EndpointTable
  schemes: readonly PaymentScheme[]
  ledger: LedgerWriter
  limiter: FixedWindowLimiter
  pool: HandlerPool
  upstream: UpstreamClient
  /** calls the tools of sellers' MCP servers (upstream MCP tools); absent: they are refused, nothing charged */
  upstreamMcp?: UpstreamMcpClient
  /** calls the skills of sellers' A2A agents; absent: they are refused, nothing charged */
  upstreamA2a?: UpstreamA2aClient
  /** settles a payment before answering (sync endpoints, blocked payers); absent: they are refused */
  sync?: SettleNow
  /** bytes a payment header may have (at least each challenge's own budget) */
  maxPaymentHeaderBytes: number
  /** x402 `payment-identifier` keys (safe retries); absent: ids are read but not acted on */
  paymentIds?: { store: PaymentIdentifierStore; answerMaxBytes: number }
  /** x402 `sign-in-with-x` (paid access); absent: endpoints with paid access are only paid for */
  signIn?: SignInDeps
  /** `upto` hosted language-model endpoints: atomic units per 1,000 reported tokens (charge.ts) */
  uptoLlmRatePer1kTokens?: bigint
  /** tests only: called between stages (see test-hooks.ts) */
  hooks?: PaidCallHooks
}

export type PaidCall = (req: CallRequest) => Promise<CallResult>

export function createPaidCall(d: PaidCallDeps): PaidCall {
  const s: Stages = {
    d,
    parseInput: createInputParser(d),
    checkPayment: createPaymentChecker(d.schemes, d.maxPaymentHeaderBytes),
    reserve: createReserver({ limiter: d.limiter, settleFirstAvailable: d.sync !== undefined }),
    dispatch: createDispatcher(d),
    finish: createFinisher(d),
    payerChallenge: createPayerChallenge(d.schemes),
    hooks: d.hooks ?? {},
    paymentIds: d.paymentIds ? createPaymentIdStage(d.paymentIds) : undefined,
    signIn: d.signIn ? createSignInStage(d.signIn) : undefined,
    grants: d.signIn?.grants,
  }
  return (req) => paidCall(s, req)
}

/** The stages of a paid call, built once from its dependencies. */
interface Stages {
  d: PaidCallDeps
  parseInput: ReturnType<typeof createInputParser>
  checkPayment: ReturnType<typeof createPaymentChecker>
  reserve: ReturnType<typeof createReserver>
  dispatch: ReturnType<typeof createDispatcher>
  finish: ReturnType<typeof createFinisher>
  payerChallenge: ReturnType<typeof createPayerChallenge>
  hooks: PaidCallHooks
  paymentIds: ReturnType<typeof createPaymentIdStage> | undefined
  signIn: ReturnType<typeof createSignInStage> | undefined
  grants: AccessGrantStore | undefined
}

async function paidCall(s: Stages, req: CallRequest): Promise<CallResult> {
  const call = resolveEndpoint(s.d.table, req)
  if (call instanceof CallRefusal) return { kind: 'refused', refusal: call }
  const refused = refusedWith(s, call, req)
  if (req.payment === undefined) {
    const proof = s.signIn && call.entry.access ? req.signIn : undefined
    return proof !== undefined ? signedIn(s, call, req, proof) : refused(CallRefusal.challenge())
  }

  const target = s.parseInput(call, req)
  if (target instanceof CallRefusal) return refused(target)
  const nowMs = Date.now()
  const checked = await s.checkPayment(call, req.payment, target, req.log, nowMs)
  if (checked instanceof CallRefusal) return refused(checked)
  const rowId = randomUUID()
  const go = (claim: PaymentIdClaim | undefined) =>
    holding(s, claim, target, req, () => run(s, call, req, target, checked, rowId, nowMs, claim))
  // a record-first call claims its payment-identifier in the statement of its `verified` row
  const deferred = target.recordFirst ? s.paymentIds?.deferredClaim(call, req, checked, target, rowId) : undefined
  if (deferred) {
    const r = await go(deferred)
    if (r !== 'id_used') return r
    // the id is used (nothing was written or reserved): what its earlier call did decides, as below
  }
  const claim = s.paymentIds ? await s.paymentIds.claim(call, req, checked, target, rowId) : undefined
  if (claim instanceof CallRefusal) return refused(claim)
  if (claim && 'kind' in claim) return claim // the id's call was served: its kept answer, nothing charged
  const r = await go(claim)
  // not with a claim held: only a deferred claim can find its id used
  return r === 'id_used' ? refused(CallRefusal.error(appError('payment_not_recorded'))) : r
}

/**
 * Runs the call holding its payment-identifier claim, and releases the claim when the call ends
 * (unless the outcome's write did); a deferred claim is held only once its statement put it in.
 */
async function holding(
  s: Stages,
  claim: PaymentIdClaim | undefined,
  target: CallTarget,
  req: CallRequest,
  go: () => Promise<CallResult | 'id_used'>,
): Promise<CallResult | 'id_used'> {
  let result: CallResult | 'id_used' | undefined
  try {
    result = await go()
    return result
  } finally {
    if (claim && (!claim.pending || claim.pending.claimed))
      await s.paymentIds!.release(claim, result === 'id_used' ? undefined : result, target, req.log)
  }
}

/** a payment refusal carries the challenge again, for the buyer that named itself (PAYER-IDENTIFIER) */
function refusedWith(s: Stages, call: ResolvedCall, req: CallRequest) {
  return async (refusal: CallRefusal): Promise<CallResult> => ({
    kind: 'refused',
    refusal,
    challenge: refusal.error ? call.challenge : correctiveChallenge(call, await s.payerChallenge(call, req), refusal),
  })
}

/** The challenge of a corrective refusal: its scheme's requirement carries the refusal's `extra`. */
function correctiveChallenge(call: ResolvedCall, challenge: Challenge, refusal: CallRefusal): Challenge {
  const c = refusal.corrective
  if (!c) return challenge
  const others = challenge.v2.accepts.slice(1)
  if (!others.some((a) => a.scheme === c.scheme)) return challenge
  return call.entry.challengeWith(
    call.method,
    others.map((a) => (a.scheme === c.scheme ? { ...a, extra: { ...a.extra, ...c.extra } } : a)),
  )
}

/** A call served on a sign-in: the proof instead of a payment; nothing reserved or charged, the use recorded. */
async function signedIn(s: Stages, call: ResolvedCall, req: CallRequest, proof: string): Promise<CallResult> {
  const refused = refusedWith(s, call, req)
  const target = s.parseInput(call, req)
  if (target instanceof CallRefusal) return refused(target)
  const who = await s.signIn!(call, proof, req.log, Date.now())
  if (who instanceof CallRefusal) return refused(who)
  const limited = await rateLimit(s.d.limiter, call, target, req.log)
  if (limited) return refused(limited)
  // a seller's origin gets the payment that bought the access as the call's payment id
  const dispatched = await s.dispatch(target, req, who.grantPaymentId)
  req.log.info({ endpoint: call.entry.path, payer: who.payer, ok: dispatched.ok }, 'served on sign-in-with-x')
  if (!dispatched.ok)
    return dispatched.answer
      ? { kind: 'answer', ...dispatched.answer }
      : { kind: 'refused', refusal: dispatched.refusal! }
  // counted for /metrics (tollgate_sign_in_calls_total); a lost count is not worth a failed call
  s.d.signIn!.redis.incr(s.d.signIn!.key(...SIGN_IN_SERVED_KEY)).catch(() => {})
  await recordUse(s, call, who, req.log)
  return { kind: 'answer', ...dispatched.answer }
}

/**
 * The served sign-in in access_uses, committed before the answer leaves (group-committed with
 * the other proxies' requests). A failed write is logged, not refused: the call was served and
 * costs nothing, and refusing now would not undo what the handler or the seller's origin did.
 */
async function recordUse(
  s: Stages,
  call: ResolvedCall,
  who: { payer: string; grantPaymentId: string },
  log: CallRequest['log'],
) {
  const uses = s.d.signIn!.uses
  if (!uses) return
  try {
    await uses.record({
      id: randomUUID(),
      payer: who.payer,
      endpoint_id: call.entry.id,
      scope_id: call.entry.access!.scopeId,
      payment_id: who.grantPaymentId,
      resource: call.entry.resourceUrl,
      method: call.method,
      pay_to: call.entry.payTo.toLowerCase(),
    })
  } catch (err) {
    log.error({ err: (err as Error).message, grantPaymentId: who.grantPaymentId }, 'sign-in use not recorded')
  }
}

/** The access grant a served payment on an endpoint with paid access writes with its outcome. */
function grantOf(s: Stages, call: ResolvedCall, checked: CheckedPayment): AccessGrantWrite | undefined {
  const access = call.entry.access
  if (!s.grants || !access) return undefined
  return { payer: checked.payment.payer.toLowerCase(), scopeId: access.scopeId, minutes: access.minutes }
}

/**
 * A served payment on an endpoint with paid access grants its payer the access: written with the
 * outcome (`folded`: only its Redis copy is left to write), or on its own for a call settled before
 * answering. A failed write is logged: the call was paid and served.
 */
async function grantAccess(
  s: Stages,
  call: ResolvedCall,
  result: CallResult,
  log: CallRequest['log'],
  folded: AccessGrantWrite | undefined,
): Promise<void> {
  const access = call.entry.access
  if (!s.grants || !access || result.kind !== 'answer' || !result.receipt) return
  if (folded?.granted) {
    const { paymentId, msLeft } = folded.granted
    // a lost Redis copy is rebuilt from Postgres on the next sign-in's miss
    await s.grants.cached(folded.payer, folded.scopeId, paymentId, msLeft).catch(() => {})
    return
  }
  try {
    await s.grants.grant(result.receipt.payer, access.scopeId, result.receipt.paymentId, access.minutes)
  } catch (err) {
    log.error({ err: (err as Error).message, paymentId: result.receipt.paymentId }, 'access grant not recorded')
  }
}

/**
 * A payment operation (batch-settlement's cooperative refund): the endpoint's rate limit, then
 * the scheme carries it out in place of the call; the endpoint is not called, nothing is charged
 * or recorded as a payment (the scheme records its own transaction).
 */
async function operated(
  s: Stages,
  call: ResolvedCall,
  req: CallRequest,
  target: CallTarget,
  checked: CheckedPayment,
  nowMs: number,
): Promise<CallResult> {
  const refused = refusedWith(s, call, req)
  const limited = await rateLimit(s.d.limiter, call, target, req.log)
  if (limited) return refused(limited)
  const op = checked.scheme.operate
  const done = op
    ? await op(checked.payment, { nowMs, callMs: target.timeoutMs, log: req.log })
    : CallRefusal.fromX402(refuse('unsupported_scheme', 'this scheme carries out no payment operation'))
  if (done instanceof CallRefusal) return refused(done)
  return {
    kind: 'answer',
    status: done.status,
    contentType: 'application/json',
    body: JSON.stringify(done.body),
    receipt: done.receipt,
  }
}

/** reserve → record → dispatch → finish */
async function run(
  s: Stages,
  call: ResolvedCall,
  req: CallRequest,
  target: CallTarget,
  checked: CheckedPayment,
  rowId: string,
  nowMs: number,
  claim: PaymentIdClaim | undefined,
): Promise<CallResult | 'id_used'> {
  const refused = refusedWith(s, call, req)
  if (checked.payment.operation) return operated(s, call, req, target, checked, nowMs)
  const held = await s.reserve(call, checked, target, req.log, nowMs)
  if (held instanceof CallRefusal) return refused(held)
  await s.hooks['after-reserve']?.()

  // a scheme that settles later (deferred vouchers, collected by their own job) is never settled now
  const settleFirst = !checked.payment.settledLater && (held.settleFirst || call.entry.settlementMode === 'sync')
  const row = paymentRow(rowId, call, checked.payment, held.settleFirst, held.rowFields)
  const grant = settleFirst ? undefined : grantOf(s, call, checked)
  try {
    if (target.recordFirst) {
      const recorded = await recordPayment(s.d.ledger, row, 'verified', held, req.log, undefined, {
        claim: claim?.pending,
      })
      if (recorded === 'id_used') return recorded
      if (recorded instanceof CallRefusal) return refused(recorded)
      await s.hooks['after-record']?.()
    }
    const dispatched = await s.dispatch(target, req, row.id)
    await s.hooks['after-dispatch']?.()
    const result = await s.finish({
      target,
      row,
      payment: checked.payment,
      held,
      settleFirst,
      dispatched,
      log: req.log,
      // the id's release and the access grant go with the outcome's write, unless a settlement may
      // still withhold the answer
      idRelease: claim && !settleFirst ? s.paymentIds!.foldedRelease(claim, target) : undefined,
      grant,
    })
    await s.hooks['after-outcome']?.()
    if (result.kind === 'refused') return refused(result.refusal)
    await grantAccess(s, call, result, req.log, grant)
    return result
  } catch (err) {
    // a stage threw (a bug, not a refusal): a call recorded once has no row yet, so its
    // reservation goes back; a `verified` row is voided by the recovery sweep, which gives it back then
    if (!target.recordFirst) await held.release()
    throw err
  }
}

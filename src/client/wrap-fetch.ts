/**
 * `wrapFetch`: a fetch that pays x402 challenges, either through the Tollgate platform from an
 * agent's custodial wallet (`{ baseUrl, agentKey }`: caps and allowlists enforced server-side)
 * or locally with the buyer's own key (`{ privateKey }`). One payment per request at most.
 *
 * It pays with `X-PAYMENT` (x402 v1) whenever the 402 offers a v1 requirement it can pay, as
 * spec 4.4 and 5 ask of the client library, except where the v2 challenge declares the
 * `payment-identifier` extension (Tollgate's proxy does): then it pays with `PAYMENT-SIGNATURE`
 * carrying a new id, and an answer lost after the payment was sent (connection reset, the server's
 * socket closed) is asked for once more with the same payment and id: the seller answers it again
 * without a second charge (or says it is still running: then it waits its `Retry-After`). A server
 * that offers v2 alone (the official `@x402/express`) is paid with `PAYMENT-SIGNATURE` too.
 *
 * A local key with `upto` set pays a seller's usage-based `upto` requirement (Permit2, v2 only)
 * where offered; the receipt's `amount` is the charge (sign-upto.ts).
 *
 * A local key with `deferred` set pays with vouchers (x402 `deferred`, v2 only) wherever a seller
 * offers them, and `exact` elsewhere: it names itself with `PAYER-IDENTIFIER` on every request,
 * aggregates onto the latest voucher the seller shows, and deposits into the escrow in the payment
 * when the balance is short (sign-deferred.ts).
 *
 * Where a seller offers paid access (x402 `sign-in-with-x`, declared in the v2 challenge), a local
 * key remembers each resource it paid for there and, on the next call to it, signs in with the
 * same wallet instead of paying (sign-in.ts); a refused sign-in (the access ran out) is paid as
 * usual. `signIn: 'always'` tries a sign-in wherever one is offered, remembered or not (a process
 * that makes one call, as the CLI: one extra round trip when the wallet never paid there).
 */
import { privateKeyToAccount } from 'viem/accounts'
import type { DeferredVoucher } from '../schemes/deferred/typed-data.js'
import {
  offeredChallenges,
  parseChallenge,
  type OfferedChallenge,
  type ParsedChallenge,
  type Requirement,
} from './challenge.js'
import { PaidCallFailedError, PaymentRefusedError } from './errors.js'
import type { PaymentInfo } from './payment-info.js'
import { deferredTerms, isPayableDeferred, signDeferred } from './sign-deferred.js'
import { newPaymentId, paymentHeader, signExact } from './sign-exact.js'
import { signInHeader, signInOffer, type SignInOffer } from './sign-in.js'
import { isSendableKey } from './sendable-key.js'
import { spendGuard, type SpendLimits } from './spend-limits.js'
import { isPayableUpto, signUpto } from './sign-upto.js'

export interface PlatformPayOptions extends SpendLimits {
  /** the Tollgate API, e.g. http://localhost:4020 */
  baseUrl: string
  /** `ak_test_…` / `ak_live_…` */
  agentKey: string
  /** x402 `sign-in-with-x` from the agent wallet (the platform signs it): as for a local key */
  signIn?: SignInMode
  /**
   * Prefer a seller's `upto` requirement (usage-based price): the platform reserves its maximum
   * against the caps and counts the actual charge once the seller recorded it. Without it, upto is
   * paid only where nothing else can be.
   */
  upto?: boolean
  /**
   * `batch-settlement` where this platform's own endpoint offers it (never a seller elsewhere), by
   * default: the platform opens a channel from the agent wallet (one deposit, at most the owner's
   * `spend_caps.channel_deposit`, default 100 x the price) and signs one cumulative voucher per
   * call; the caps count each call's price. Left out, it gives way to exact where the deposit
   * cannot be made (above the bound, or more than the wallet holds); `true` insists (such a call is
   * refused); `false` opts out (exact where offered beside it).
   */
  batchSettlement?: boolean
  /**
   * A payment the agent's policy holds for its owner's approval (the platform answers 202 with an
   * approval id): wait up to `timeoutMs` for the decision, polling every `pollMs` (default 2000),
   * then retry with the approval id. Without it such a payment is refused at once (`approval_pending`).
   */
  approval?: { timeoutMs: number; pollMs?: number; onProgress?(status: string, approvalId: string): void }
}

export interface LocalPayOptions extends SpendLimits {
  privateKey: `0x${string}`
  /** refuse requirements above this many atomic units (default: no limit) */
  maxAmount?: bigint
  /** chain ids this key may pay on (default: any the challenge names) */
  chainIds?: number[]
  /**
   * Pay with vouchers (x402 `deferred`) where a seller offers them; off by default, since it sends
   * the key's address (`PAYER-IDENTIFIER`) with every request, before anything is paid.
   * `true` or `{}` turns it on with the default deposit.
   */
  deferred?: boolean | DeferredPayOptions
  /**
   * Pay a seller's `upto` requirement (usage-based price, x402 v2) where offered: a Permit2
   * authorization for the maximum, of which the seller settles the actual charge (`res.payment.amount`;
   * `maxAmount` the maximum). The key's wallet must have approved Permit2 for the asset once
   * (`approve(0x000000000022D473030F116dDEE9F6B43aC78BA3, max)`); off by default. `maxAmount` applies to the maximum.
   */
  upto?: boolean
  /**
   * x402 `sign-in-with-x`: `'remembered'` (default) signs in where this wrapped fetch already paid
   * for the resource and the seller offers it; `'always'` wherever it is offered; `'never'` pays every time.
   */
  signIn?: SignInMode
}

export type SignInMode = 'remembered' | 'always' | 'never'

export interface DeferredPayOptions {
  /**
   * What to deposit into the escrow for a seller, in the payment itself (gasless: the seller's
   * relayer executes it), when the balance there is short: before the first voucher when the
   * escrow holds less than the price, and on an `invalid_deferred_evm_insufficient_escrow_balance`
   * refusal (the call is then retried once with the deposit). Default: 100 x the price. Never less
   * than the price.
   */
  depositAmount?: bigint
  /** never deposit; a short balance is a refusal (`payment_rejected`) */
  noDeposit?: boolean
}

export type WrapFetchOptions = PlatformPayOptions | LocalPayOptions

export type { PaymentInfo } from './payment-info.js'

/** A call served on a sign-in (x402 `sign-in-with-x`): nothing was paid. */
export interface SignInInfo {
  /** the wallet that signed in */
  payer: string
  /** the resource whose paid access served it */
  uri: string
}

export type PaidResponse = Response & { payment?: PaymentInfo; signedIn?: SignInInfo }
/** The wrapped fetch; `spent`: atomic units it paid so far (what `budget` counts). */
export type PaidFetch = ((input: string | URL | Request, init?: RequestInit) => Promise<PaidResponse>) & {
  readonly spent: bigint
}
export type FetchLike = (input: string | URL | Request, init?: RequestInit) => Promise<Response>

/**
 * @example
 *   const pay = wrapFetch(fetch, { baseUrl: 'http://localhost:4020', agentKey: process.env.TOLLGATE_AGENT_KEY! })
 *   const res = await pay('http://localhost:4021/tollgate/toolbox/uuid-generator')
 *   console.log(await res.json(), res.payment?.transaction)
 */
export function wrapFetch(fetchImpl: FetchLike, opts: WrapFetchOptions): PaidFetch {
  const w: Wrapped = {
    fetchImpl,
    payer: 'privateKey' in opts ? localPayer(opts) : platformPayer(fetchImpl, opts),
    // the caller's own maxPerCall and budget, checked before anything is signed
    guard: spendGuard(opts, (m, d) => new PaymentRefusedError('spend_cap_exceeded', m, d)),
    signInMode: opts.signIn ?? 'remembered',
    paidAccess: new Set<string>(),
  }
  const paidFetch = (input: string | URL | Request, init?: RequestInit) => paidCall(w, new Request(input, init))
  return Object.defineProperty(paidFetch, 'spent', { get: () => w.guard.spent, enumerable: true }) as PaidFetch
}

/** One wrapped fetch's parts. */
interface Wrapped {
  fetchImpl: FetchLike
  payer: Payer
  guard: ReturnType<typeof spendGuard>
  signInMode: SignInMode
  /** resources paid for where the seller offered sign-in: the next call signs in instead */
  paidAccess: Set<string>
}

/** A call: sent as is; on a 402, signed in where the seller offers it and this wallet paid, else paid. */
async function paidCall(w: Wrapped, request: Request): Promise<PaidResponse> {
  const { fetchImpl, payer } = w
  if (request.headers.has('x-payment') || request.headers.has('payment-signature')) return fetchImpl(request)
  // deferred: the seller shows this buyer's escrow account and latest voucher in the 402
  if (payer.identify && !request.headers.has('payer-identifier'))
    request.headers.set('payer-identifier', payer.identify)
  const retry = request.clone()
  const first = await fetchImpl(request)
  if (first.status !== 402) return first
  const ch = await readChallenge(first)
  request.signal.throwIfAborted() // aborted while the 402 was read: sign nothing
  const offer = w.signInMode === 'never' ? undefined : signInOffer(ch.offered, first.url || request.url)
  if (offer) {
    const signedIn = await trySignIn(w, offer, ch, request, retry)
    if (signedIn) return signedIn
  }
  const cheapest = cheapestOf(ch)
  if (cheapest !== undefined) w.guard.check(cheapest)
  const signed = await payer.sign(ch, request, newPaymentId())
  let release: (charged: bigint) => void
  try {
    release = w.guard.hold(BigInt(signed.amount))
  } catch (err) {
    // signed but never sent: the platform releases (or cancels) it on a rejected report
    signed.done?.(false)
    await payer.report?.(signed, 'rejected', undefined)
    throw err
  }
  const sent = await sendOrReport(w, retry, signed, release)
  const res = sent.res
  sent.signed.done?.(res.ok)
  if (offer && res.ok) w.paidAccess.add(offer.uri)
  return answered(w, sent, release)
}

/**
 * Signs in where this wallet paid for access (or always, when asked); the answer, or undefined to
 * pay as usual (no sign-in, or refused: the access ran out, or the wallet never paid here).
 */
async function trySignIn(
  w: Wrapped,
  offer: SignInOffer,
  ch: Challenges,
  request: Request,
  retry: Request,
): Promise<PaidResponse | undefined> {
  if (w.signInMode !== 'always' && !w.paidAccess.has(offer.uri)) return undefined
  const proof = await w.payer.signIn(offer, ch, request)
  if (!proof) return undefined
  const attempt = retry.clone()
  attempt.headers.set('sign-in-with-x', proof.value)
  const res = (await w.fetchImpl(attempt)) as PaidResponse
  if (res.status !== 402) {
    Object.defineProperty(res, 'signedIn', { value: { payer: proof.payer, uri: offer.uri }, enumerable: true })
    return res
  }
  w.paidAccess.delete(offer.uri)
  await res.body?.cancel()
  return undefined
}

/** A payment sent; the signature that went (a deposit retry signs again). */
interface Sent {
  res: PaidResponse
  retried: boolean
  signed: Signed
}

/** Sends the payment (once more with a deposit on a short escrow); a send with no answer is reported and thrown. */
async function sendOrReport(
  w: Wrapped,
  retry: Request,
  signed: Signed,
  release: (charged: bigint) => void,
): Promise<Sent> {
  try {
    // a voucher refused for a short escrow balance is sent once more with a deposit
    const spare = signed.withDeposit ? retry.clone() : undefined
    retry.headers.set(signed.header, signed.value)
    const sent = await sendPaid(w.fetchImpl, retry, signed)
    if (
      sent.res.status !== 402 ||
      !spare ||
      !signed.withDeposit ||
      (await refusalReason(sent.res.clone(), false)) !== 'invalid_deferred_evm_insufficient_escrow_balance'
    )
      return { ...sent, signed }
    const again = await signed.withDeposit(await readRefusal(sent.res.clone()))
    if (!again) return { ...sent, signed }
    // the same voucher, signed again: its signer's turn to this seller goes on with the new one
    signed = again
    spare.headers.set(signed.header, signed.value)
    return { ...(await sendPaid(w.fetchImpl, spare, signed)), signed }
  } catch (err) {
    signed.done?.(false)
    // sent, with no answer: the seller may settle it, so the budget counts it
    release(BigInt(signed.amount))
    if ((err as Error).name === 'AbortError') throw err
    // the seller may have received the payment: say which one, so its settlement can be looked up
    await w.payer.report?.(signed, 'error', undefined)
    throw new PaidCallFailedError(
      {
        success: false,
        network: signed.network,
        payer: signed.payer,
        agentPaymentId: signed.agentPaymentId,
        nonce: signed.nonce,
        amount: signed.amount,
        payTo: signed.payTo,
        header: signed.header,
        scheme: signed.scheme,
        ...idOf(signed),
      },
      err,
    )
  }
}

/** The seller's answer to a payment: reported, the budget settled, a refusal thrown, else the answer with `payment`. */
async function answered(w: Wrapped, sent: Sent, release: (charged: bigint) => void): Promise<PaidResponse> {
  const { res, signed } = sent
  const v1 = signed.header === 'X-PAYMENT'
  const [own, other] = v1 ? ['x-payment-response', 'payment-response'] : ['payment-response', 'x-payment-response']
  const decoded = decodePaymentResponse(res.headers.get(own) ?? res.headers.get(other))
  const accepted = res.status !== 402 && (decoded?.success ?? res.ok)
  await w.payer.report?.(signed, res.status === 402 ? 'rejected' : accepted ? 'accepted' : 'error', decoded)
  if (res.status === 402) {
    release(0n)
    const reason = await refusalReason(res.clone(), v1)
    throw new PaymentRefusedError(
      'payment_rejected',
      `the seller refused the payment: ${reason}`,
      // the platform's id of the payment it signed (reported as rejected: nothing charged)
      { reason, ...(signed.agentPaymentId ? { payment_id: signed.agentPaymentId } : {}) },
      402,
      res,
    )
  }
  const info = paymentInfoOf(sent, decoded)
  release(accepted ? BigInt(info.amount) : 0n)
  Object.defineProperty(res, 'payment', { value: info, enumerable: true })
  return res
}

/** What the call paid, from the signature sent and the seller's payment response. */
function paymentInfoOf({ res, signed, retried }: Sent, decoded: ReturnType<typeof decodePaymentResponse>): PaymentInfo {
  return {
    success: decoded?.success ?? res.ok,
    // an empty string is what sellers send before settling: no transaction yet, so none here
    ...(decoded?.transaction ? { transaction: decoded.transaction } : {}),
    network: decoded?.network ?? signed.network,
    payer: decoded?.payer ?? signed.payer,
    paymentId: decoded?.paymentId,
    agentPaymentId: signed.agentPaymentId,
    nonce: signed.nonce,
    amount:
      signed.scheme === 'upto' && typeof decoded?.amount === 'string' && /^[0-9]{1,40}$/.test(decoded.amount)
        ? decoded.amount
        : signed.amount,
    ...(signed.scheme === 'upto' ? { maxAmount: signed.amount } : {}),
    payTo: signed.payTo,
    header: signed.header,
    ...idOf(signed),
    ...(retried ? { retried: true } : {}),
    scheme: signed.scheme,
    ...(signed.voucher
      ? {
          voucher: {
            id: signed.voucher.id,
            nonce: signed.voucher.nonce.toString(),
            valueAggregate: signed.voucher.valueAggregate.toString(),
          },
        }
      : {}),
    ...(signed.deposit !== undefined ? { deposit: signed.deposit.toString() } : {}),
  }
}

/** The lowest amount any requirement of the challenge asks (undefined when none could be read). */
function cheapestOf(ch: Challenges): bigint | undefined {
  let min: bigint | undefined
  for (const o of ch.offered) for (const r of o.parsed.accepts) if (min === undefined || r.amount < min) min = r.amount
  return min
}

/** A payment signed for one challenge: the header to retry with, and what it pays. */
export interface Signed {
  header: 'X-PAYMENT' | 'PAYMENT-SIGNATURE'
  value: string
  amount: string
  payTo: string
  payer: string
  network: string
  agentPaymentId?: string
  nonce?: string
  /** the x402 `payment-identifier` in the header, when the challenge declared the extension */
  paymentIdentifier?: string
  scheme: string
  voucher?: { id: string; nonce: bigint; valueAggregate: bigint }
  deposit?: bigint
  /** deferred: the same voucher again with a deposit, after a short-balance refusal (its 402 challenge, when readable) */
  withDeposit?: (refusal: ParsedChallenge | undefined) => Promise<Signed | undefined>
  /** called once the paid retry is answered (`ok`: a 2xx) or failed */
  done?: (ok: boolean) => void
}

const idOf = (s: Signed) => (s.paymentIdentifier ? { paymentIdentifier: s.paymentIdentifier } : {})

/** How many "still running" answers a retry after a lost answer waits through (each its Retry-After, at most 5 s). */
const MAX_IN_PROGRESS_WAITS = 120

/**
 * Sends the paid request. With a `payment-identifier`, an answer lost on the way (fetch failed:
 * connection reset, socket closed; not the caller's abort or timeout) is asked for once more with
 * the same payment and id, and a "still running" answer to that is waited through.
 */
async function sendPaid(
  fetchImpl: FetchLike,
  template: Request,
  signed: Signed,
): Promise<{ res: Response; retried: boolean }> {
  const first = template.clone()
  if (!signed.paymentIdentifier) return { res: await fetchImpl(template), retried: false }
  try {
    return { res: await fetchImpl(first), retried: false }
  } catch (err) {
    const name = (err as Error).name
    if (name === 'AbortError' || name === 'TimeoutError') throw err
  }
  for (let waits = 0; ; waits++) {
    const res = await fetchImpl(template.clone())
    if (res.status !== 409 || waits >= MAX_IN_PROGRESS_WAITS) return { res, retried: true }
    const code = await res
      .clone()
      .json()
      .then(
        (b: { code?: unknown } | null) => b?.code,
        () => undefined,
      )
    if (code !== 'payment_identifier_in_progress') return { res, retried: true }
    await res.body?.cancel()
    const seconds = Number(res.headers.get('retry-after'))
    await pause(Number.isFinite(seconds) && seconds > 0 ? Math.min(seconds, 5) * 1000 : 1000, template.signal)
  }
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    signal.throwIfAborted()
    const done = () => {
      clearTimeout(timer)
      reject(signal.reason)
    }
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', done)
      resolve()
    }, ms)
    signal.addEventListener('abort', done, { once: true })
  })
}

/** The readable challenges of a 402, v1 first, and what to send the platform when none is readable. */
export interface Challenges {
  offered: OfferedChallenge[]
  raw: unknown
}

/** Platform refusals that concern one challenge only: nothing was signed, so the next one is tried. */
const TRY_NEXT = new Set(['unsupported_requirements', 'invalid_parameter'])

/** Signs a payment for a challenge; the platform's also hears how the paid call went. */
export interface Payer {
  /** the address to send as PAYER-IDENTIFIER (deferred) */
  identify?: string
  /** `paymentId` goes in the header when the chosen challenge declares `payment-identifier` */
  sign(ch: Challenges, request: Request, paymentId: string): Promise<Signed>
  /** the SIGN-IN-WITH-X header for an offered sign-in and who signed it; undefined: pay instead */
  signIn(offer: SignInOffer, ch: Challenges, request: Request): Promise<{ value: string; payer: string } | undefined>
  report?(
    s: Signed,
    status: 'accepted' | 'rejected' | 'error',
    response: Record<string, unknown> | undefined,
  ): Promise<void>
}

/**
 * The platform as payer: POST /v1/agent/payments signs from the agent's custodial wallet (caps and
 * allowlist enforced there; a refusal is a PaymentRefusedError), and the outcome is reported.
 * `tollgate mcp` pays MCP tool challenges with it too.
 */
/**
 * A payment held for the owner's approval (202): waits for the decision (`o.approval`), polling
 * GET /v1/agent/approvals/{id}, then retries the same payment with `approval_id` and answers the
 * signed payment's body. Denied, expired, no decision in time, or no waiting asked: refused.
 */
async function approved(
  fetchImpl: FetchLike,
  base: string,
  headers: Record<string, string>,
  o: PlatformPayOptions,
  held: Record<string, unknown>,
  signal: AbortSignal,
  pay: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  const id = String(held.approval_id)
  const refuse = (code: string, message: string, status: number) =>
    new PaymentRefusedError(code, message, { approval_id: id, expires_at: held.expires_at }, status)
  if (!o.approval)
    throw refuse('approval_pending', `this payment waits for the owner's approval ${id}: ${String(held.message)}`, 202)
  const until = Date.now() + o.approval.timeoutMs
  let status = String(held.status)
  while (status === 'pending') {
    o.approval.onProgress?.(`waiting for the owner to approve ${id}`, id)
    if (Date.now() >= until)
      throw refuse(
        'approval_timeout',
        `no decision on approval ${id} in ${Math.round(o.approval.timeoutMs / 1000)} s; approve it (tollgate approvals approve ${id}, the dashboard or the link) and run again`,
        408,
      )
    await new Promise((r) => setTimeout(r, Math.min(o.approval!.pollMs ?? 2000, Math.max(0, until - Date.now()))))
    signal.throwIfAborted()
    const r = await fetchImpl(`${base}/v1/agent/approvals/${encodeURIComponent(id)}`, { headers, signal })
    const b = (await r.json().catch(() => ({}))) as Record<string, unknown>
    if (!r.ok) throw refuse(String(b.code ?? 'platform_error'), String(b.message ?? `answered ${r.status}`), r.status)
    status = String(b.status)
  }
  if (status === 'denied') throw refuse('approval_denied', `the owner denied approval ${id}: nothing was paid`, 403)
  if (status === 'expired')
    throw refuse('approval_expired', `approval ${id} expired before it was decided or used: nothing was paid`, 409)
  const res = await fetchImpl(`${base}/v1/agent/payments`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ ...pay, approval_id: id }),
    signal,
  })
  const body = (await res.json().catch(() => ({}))) as Record<string, unknown>
  if (!res.ok)
    throw refuse(
      typeof body.code === 'string' ? body.code : 'platform_error',
      typeof body.message === 'string' ? body.message : `the platform answered ${res.status}`,
      res.status,
    )
  return body
}

export function platformPayer(fetchImpl: FetchLike, o: PlatformPayOptions): Payer {
  if (!isSendableKey(o.agentKey))
    throw new TypeError(
      'agentKey must be an agent key (ak_test_… / ak_live_…): this one is empty or has a space, line break or other character no key has (not shown)',
    )
  const base = o.baseUrl.replace(/\/+$/, '')
  const headers = { authorization: `Bearer ${o.agentKey}`, 'content-type': 'application/json' }
  return {
    async sign(ch, request, paymentId) {
      // the v1 body first (paid with X-PAYMENT); the v2 header when the platform can pay nothing in
      // it — or first when it offers vouchers (deferred, v2 only), which the platform prefers, or
      // batch-settlement (v2 only) unless opted out, or upto (v2 only) when asked for
      const batch = o.batchSettlement !== false
      const offered = [...ch.offered].sort((a, b) => rank(a, o.upto, batch) - rank(b, o.upto, batch))
      const raws = offered.length > 0 ? offered.map((o) => o.raw) : [ch.raw]
      for (let i = 0; ; i++) {
        // the caller's signal: an abort while the platform signs leaves nothing to retry with
        const res = await fetchImpl(`${base}/v1/agent/payments`, {
          method: 'POST',
          headers,
          body: JSON.stringify({
            url: request.url,
            method: request.method,
            challenge: raws[i],
            payment_identifier: paymentId,
            ...(o.upto ? { upto: true } : {}),
            ...(o.batchSettlement !== undefined ? { batch_settlement: o.batchSettlement } : {}),
          }),
          signal: request.signal,
        })
        let body = (await res.json().catch(() => ({}))) as Record<string, unknown>
        if (res.status === 202 && body.object === 'approval')
          body = await approved(fetchImpl, base, headers, o, body, request.signal, {
            url: request.url,
            method: request.method,
            challenge: raws[i],
            payment_identifier: paymentId,
            ...(o.upto ? { upto: true } : {}),
            ...(o.batchSettlement !== undefined ? { batch_settlement: o.batchSettlement } : {}),
          })
        if (res.ok) {
          // e.g. a dashboard or proxy address that answers every path: never retry with a junk header
          if ((body.header !== 'X-PAYMENT' && body.header !== 'PAYMENT-SIGNATURE') || typeof body.value !== 'string') {
            throw new Error(
              `the platform at ${base} answered ${res.status} without a signed payment: is that the Tollgate API address?`,
            )
          }
          return {
            header: body.header as Signed['header'],
            value: body.value as string,
            amount: body.amount as string,
            payTo: body.pay_to as string,
            payer: body.payer as string,
            network: body.network as string,
            agentPaymentId: body.payment_id as string,
            nonce: typeof body.nonce === 'string' ? body.nonce : undefined,
            paymentIdentifier: typeof body.payment_identifier === 'string' ? body.payment_identifier : undefined,
            scheme: typeof body.scheme === 'string' ? body.scheme : 'exact',
            ...voucherOf(body),
          }
        }
        const { code, message, statusCode: _s, error: _e, ...details } = body
        if (typeof code === 'string' && TRY_NEXT.has(code) && i + 1 < raws.length) continue
        throw new PaymentRefusedError(
          typeof code === 'string' ? code : 'platform_error',
          typeof message === 'string' ? message : `the platform answered ${res.status}`,
          details,
          res.status,
        )
      }
    },
    /** POST /v1/agent/sign-in: the agent wallet signs the proof; a platform that cannot (refusal, no such route) leaves the call to be paid */
    async signIn(_offer, ch, request) {
      const v2 = ch.offered.find((o) => o.parsed.version === 2)
      if (!v2) return undefined
      const res = await fetchImpl(`${base}/v1/agent/sign-in`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ url: request.url, method: request.method, challenge: v2.raw }),
        signal: request.signal,
      })
      const body = (await res.json().catch(() => ({}))) as Record<string, unknown>
      if (!res.ok || typeof body.value !== 'string' || typeof body.payer !== 'string') return undefined
      return { value: body.value, payer: body.payer }
    },
    async report(s, status, response) {
      await fetchImpl(`${base}/v1/agent/payments/${s.agentPaymentId}/outcome`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ status, payment_response: response ?? null }),
      })
        .then((r) => r.body?.cancel())
        .catch(() => {}) // the expiry sweep settles an unreported outcome
    },
  }
}

/** 0 for a challenge that offers a voucher (deferred), upto when asked for, or batch-settlement unless opted out; else 1 */
const rank = (o: OfferedChallenge, upto?: boolean, batch?: boolean) =>
  o.parsed.accepts.some(
    (r) => r.scheme === 'deferred' || (upto && r.scheme === 'upto') || (batch && r.scheme === 'batch-settlement'),
  )
    ? 0
    : 1

/** The platform's `voucher` and `deposit` answer fields, for PaymentInfo. */
function voucherOf(body: Record<string, unknown>): Pick<Signed, 'voucher' | 'deposit'> {
  const v = body.voucher as Record<string, unknown> | undefined
  const out: Pick<Signed, 'voucher' | 'deposit'> = {}
  if (v && typeof v.id === 'string' && typeof v.nonce === 'string' && typeof v.value_aggregate === 'string')
    out.voucher = { id: v.id, nonce: BigInt(v.nonce), valueAggregate: BigInt(v.value_aggregate) }
  if (typeof body.deposit === 'string') out.deposit = BigInt(body.deposit)
  return out
}

/** The buyer's own key as payer (wrapFetch's `{ privateKey }`); `callPaidTool` pays MCP tool challenges with it too. */
export function localPayer(o: LocalPayOptions): Payer {
  const account = privateKeyToAccount(o.privateKey)
  const key = Buffer.from(o.privateKey.slice(2), 'hex')
  const deferred = o.deferred ? deferredPayer(account, o, o.deferred === true ? {} : o.deferred) : undefined
  return {
    identify: deferred ? account.address : undefined,
    signIn: async (offer) => ({
      value: await signInHeader(offer, account.address, (message) => account.signMessage({ message })),
      payer: account.address,
    }),
    async sign(ch, _request, paymentId) {
      if (ch.offered.length === 0)
        throw new PaymentRefusedError('invalid_challenge', 'the 402 carries no readable x402 challenge')
      const allowedChain = (r: Requirement) =>
        r.chainId !== undefined && (!o.chainIds || o.chainIds.includes(r.chainId))
      const overMax = (r: Requirement) =>
        new PaymentRefusedError('spend_cap_exceeded', `the price ${r.amount} is above maxAmount ${o.maxAmount}`, {
          cap: 'max_amount',
          remaining: o.maxAmount!.toString(),
        })
      if (deferred) {
        // vouchers first where offered (v2 only): that is what turning `deferred` on asks for
        for (const { parsed } of ch.offered) {
          const req = parsed.accepts.find((r) => isPayableDeferred(r) && allowedChain(r))
          if (!req) continue
          if (o.maxAmount !== undefined && req.amount > o.maxAmount) throw overMax(req)
          return deferred.sign(parsed, req)
        }
      }
      if (o.upto) {
        // usage-based first where offered (v2 only): that is what turning `upto` on asks for
        for (const { parsed } of ch.offered) {
          const req = parsed.accepts.find((r) => isPayableUpto(r) && allowedChain(r))
          if (!req) continue
          if (o.maxAmount !== undefined && req.amount > o.maxAmount) throw overMax(req)
          const s = await signUpto(account, req, Math.floor(Date.now() / 1000))
          const { paymentId: carried, ...h } = paymentHeader(parsed, req, s.payload, paymentId)
          return {
            ...h,
            ...(carried ? { paymentIdentifier: carried } : {}),
            amount: req.amount.toString(),
            payTo: req.payTo,
            payer: account.address,
            network: req.network,
            nonce: s.nonce,
            scheme: 'upto',
          }
        }
      }
      const payable = (
        r: Requirement,
      ): r is Requirement & { chainId: number; extra: { name: string; version: string } } =>
        r.scheme === 'exact' && allowedChain(r) && r.extra !== undefined && /^0x[0-9a-fA-F]{40}$/.test(r.asset)
      // the first challenge (v1 before v2) with a requirement this key can pay
      for (const { parsed } of ch.offered) {
        const ok = parsed.accepts
          .filter(payable)
          .sort((a, b) => (a.amount < b.amount ? -1 : a.amount > b.amount ? 1 : 0))
        if (ok.length === 0) continue
        const req = ok[0]!
        if (o.maxAmount !== undefined && req.amount > o.maxAmount) throw overMax(req)
        const payload = signExact(
          key,
          account.address,
          {
            chainId: req.chainId,
            asset: req.asset,
            token: req.extra,
            payTo: req.payTo,
            amount: req.amount,
            maxTimeoutSeconds: req.maxTimeoutSeconds,
          },
          Math.floor(Date.now() / 1000),
        )
        const { paymentId: carried, ...h } = paymentHeader(parsed, req, payload, paymentId)
        return {
          ...h,
          ...(carried ? { paymentIdentifier: carried } : {}),
          amount: req.amount.toString(),
          payTo: req.payTo,
          payer: account.address,
          network: req.network,
          nonce: payload.authorization.nonce,
          scheme: 'exact',
        }
      }
      throw new PaymentRefusedError(
        'unsupported_requirements',
        deferred
          ? 'no exact or deferred EVM requirement with an EIP-712 token domain'
          : 'no exact EVM requirement with an EIP-712 token domain',
      )
    },
  }
}

/**
 * A local key's vouchers. Calls to one seller (escrow, seller, asset) are signed and sent one at a
 * time, and the voucher of the last call answered is remembered: a call whose 402 was read while
 * another was in flight aggregates onto that one rather than onto the stale `extra.voucher`.
 */
function deferredPayer(account: ReturnType<typeof privateKeyToAccount>, o: LocalPayOptions, d: DeferredPayOptions) {
  const latest = new Map<string, DeferredVoucher>()
  /** calls answered per seller: a 402 read before one of them shows a stale account */
  const answered = new Map<string, number>()
  const queues = new Map<string, Promise<void>>()
  /** waits for the calls to this seller before it; resolves to the release */
  const turn = async (k: string): Promise<() => void> => {
    let release!: () => void
    const mine = new Promise<void>((r) => (release = r))
    const before = queues.get(k) ?? Promise.resolve()
    const chained = before.then(() => mine)
    queues.set(k, chained)
    await before
    return () => {
      release()
      if (queues.get(k) === chained) queues.delete(k)
    }
  }
  return {
    async sign(parsed: ParsedChallenge, req: Requirement): Promise<Signed> {
      const terms = await deferredTerms(req, account.address)
      const k = `${terms.escrow}:${terms.seller}:${terms.asset}`.toLowerCase()
      const seen = answered.get(k) ?? 0
      const release = await turn(k)
      try {
        const known = latest.get(k)
        // ours from an earlier call, newer than what the seller showed (its 402 came before that call's answer)
        const previous =
          known && terms.latest && known.id === terms.latest.id && known.nonce > terms.latest.nonce
            ? known
            : (terms.latest ?? known)
        const depositAmount = (): bigint => {
          const want = d.depositAmount ?? 100n * terms.amount
          return want < terms.amount ? terms.amount : want
        }
        // a call answered since this 402 was read may have deposited: then only a refusal says the balance is short
        const stale = (answered.get(k) ?? 0) !== seen
        const short = !d.noDeposit && !stale && terms.account !== undefined && terms.account.balance < terms.amount
        const make = async (deposit: bigint | undefined, t = terms): Promise<Signed> => {
          const s = await signDeferred(account, t, { previous, deposit })
          const h = paymentHeader(parsed, req, s.payload)
          let finished = false
          return {
            ...h,
            amount: req.amount.toString(),
            payTo: req.payTo,
            payer: account.address,
            network: req.network,
            scheme: 'deferred',
            voucher: s.voucher,
            deposit: s.deposit,
            withDeposit:
              s.deposit === undefined && !d.noDeposit
                ? async (refusal) => {
                    // the refusal's own requirement shows the account as it is now (allowance, permit nonce)
                    const fresh = refusal?.accepts.find(
                      (r) => isPayableDeferred(r) && r.payTo.toLowerCase() === req.payTo.toLowerCase(),
                    )
                    const now = fresh ? await deferredTerms(fresh, account.address) : terms
                    return make(depositAmount(), { ...terms, account: now.account })
                  }
                : undefined,
            done(ok) {
              if (finished) return
              finished = true
              answered.set(k, (answered.get(k) ?? 0) + 1)
              if (ok) latest.set(k, s.voucher)
              // not taken (or unknown): the seller's next 402 says where the voucher id stands
              else if (latest.get(k) === previous) latest.delete(k)
              release()
            },
          }
        }
        return await make(short ? depositAmount() : undefined)
      } catch (err) {
        release()
        throw err
      }
    },
  }
}

/** The v2 challenge of a refused retry's 402, when it has a readable one. */
async function readRefusal(res: Response): Promise<ParsedChallenge | undefined> {
  try {
    return parseChallenge(res.headers.get('payment-required') ?? undefined)
  } catch {
    return undefined
  }
}

/** The v1 body and the v2 `PAYMENT-REQUIRED` header of a 402, v1 first (offeredChallenges). */
async function readChallenge(res: Response): Promise<Challenges> {
  const header = res.headers.get('payment-required')
  const text = await res.text().catch(() => '')
  let body: unknown
  try {
    body = JSON.parse(text)
  } catch {
    body = undefined
  }
  if (header === null && body === undefined)
    throw new PaymentRefusedError('invalid_challenge', 'the server answered 402 without an x402 challenge', {}, 402)
  return { offered: offeredChallenges(header, body), raw: header ?? body }
}

/** The seller's `error` for the refused retry: from the v1 body after `X-PAYMENT`, from the v2 header after `PAYMENT-SIGNATURE`, else the other. */
async function refusalReason(res: Response, v1: boolean): Promise<string> {
  const fromHeader = (): unknown => {
    const h = res.headers.get('payment-required')
    return h ? JSON.parse(Buffer.from(h, 'base64').toString('utf8')).error : undefined
  }
  const fromBody = async (): Promise<unknown> => ((await res.json()) as { error?: unknown } | null)?.error
  const read = async (f: () => unknown): Promise<unknown> => {
    try {
      return await f()
    } catch {
      return undefined
    }
  }
  const [first, second] = v1 ? [fromBody, fromHeader] : [fromHeader, fromBody]
  const reason = (await read(first)) ?? (await read(second))
  return typeof reason === 'string' ? reason : 'unknown'
}

/** Decodes a `PAYMENT-RESPONSE` / `X-PAYMENT-RESPONSE` header (base64 JSON); undefined when absent or unreadable. */
export function decodePaymentResponse(header: string | null):
  | (Record<string, unknown> & {
      success?: boolean
      transaction?: string
      network?: string
      payer?: string
      paymentId?: string
    })
  | undefined {
  if (!header) return undefined
  try {
    const v = JSON.parse(Buffer.from(header, 'base64').toString('utf8'))
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? v : undefined
  } catch {
    return undefined
  }
}

import {
  ChallengeError,
  parseChallenge,
  sameResource,
  type ParsedChallenge,
  type Requirement,
} from '../../client/challenge.js'
import { isPayableDeferred } from '../../client/sign-deferred.js'
import { isPayableUpto } from '../../client/sign-upto.js'
import { appError } from '../../errors.js'
import { formatUsdc } from '../../x402/usdc-amount.js'
import type { AgentRow } from '../accounts/agent-auth.js'
import { MAX_COUNTED } from './spend-windows.js'

export interface PayBody {
  url?: unknown
  method?: unknown
  challenge?: unknown
  dry_run?: unknown
  /** an x402 `payment-identifier` to carry in a v2 payment whose challenge declares the extension */
  payment_identifier?: unknown
  /** deferred: what to deposit into the escrow when the agent's balance there is short (decimal atomic units) */
  deposit_amount?: unknown
  /**
   * upto (usage-based prices): `true` prefers a seller's `upto` requirement (the caps reserve its
   * maximum, the actual charge is kept); otherwise upto is paid only where nothing else is payable
   */
  upto?: unknown
  /**
   * batch-settlement (this platform's own endpoints only): by default preferred to a transfer at the
   * same price (a channel, one deposit bounded by the owner's `spend_caps.channel_deposit`, then a
   * voucher per call), giving way where its deposit cannot be made (payable-requirement.ts); `true`
   * puts it first and insists; `false` pays it only where nothing else is payable
   */
  batch_settlement?: unknown
  /** the approval (services/approvals) this retry pays under: signed once, on exactly the approved terms */
  approval_id?: unknown
}

/** What this deployment can pay: exact USDC on its own chain. */
export interface PayableTerms {
  chainId: number
  network: string
  caip2: string
  /** lower-case */
  usdc: string
  /** lower-case: the DeferredPaymentEscrow this deployment pays `deferred` into; undefined: exact only */
  escrow: string | undefined
  /** the origin of this platform's own proxy (its namespaces can be allowlisted), if parseable */
  proxyOrigin: string | undefined
  /** batch-settlement is paid (on this platform's own proxy only, whose registry and receiverAuthorizer the platform checks) */
  batch?: boolean
}

export interface Choice {
  ch: ParsedChallenge
  url: URL
  method: string
  /** what the agent may pay, cheapest first */
  payable: Requirement[]
  /**
   * requirements of `payable` allowed only by a `host` entry, for a seller elsewhere: payable only
   * when the host itself asks for their payee (seen-challenges.ts)
   */
  hostOnly: ReadonlySet<Requirement>
}

const METHOD_RE = /^[A-Z]{1,10}$/
const MAX_URL = 2048

/**
 * Validates a pay request and narrows its challenge to the requirements this agent may pay: for
 * the URL asked, this deployment's network and USDC, an amount the caps can count, an allowed
 * seller; cheapest first. Pure: throws the catalogue error that says why nothing can be paid.
 */
export function chooseRequirement(agent: Pick<AgentRow, 'allowlist'>, body: PayBody, terms: PayableTerms): Choice {
  if (typeof body.url !== 'string' || body.url.length > MAX_URL)
    throw appError(
      'invalid_parameter',
      { param: 'url', detail: `expected an absolute http(s) URL of at most ${MAX_URL} characters` },
      { details: { param: 'url' } },
    )
  let url: URL
  try {
    url = new URL(body.url)
  } catch {
    throw appError('invalid_parameter', { param: 'url', detail: 'not an absolute URL' }, { details: { param: 'url' } })
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw appError(
      'invalid_parameter',
      { param: 'url', detail: 'only http and https URLs' },
      { details: { param: 'url' } },
    )
  const method = body.method === undefined ? 'GET' : body.method
  if (typeof method !== 'string' || !METHOD_RE.test(method))
    throw appError(
      'invalid_parameter',
      { param: 'method', detail: 'expected an upper-case HTTP method' },
      { details: { param: 'method' } },
    )
  let ch: ParsedChallenge
  try {
    ch = parseChallenge(body.challenge)
  } catch (err) {
    if (err instanceof ChallengeError)
      throw appError(
        'invalid_parameter',
        { param: 'challenge', detail: err.message },
        { details: { param: 'challenge' } },
      )
    throw err
  }
  const forUrl = ch.accepts.filter((r) => sameResource(url.href, r.resourceUrl))
  if (forUrl.length === 0)
    throw appError(
      'invalid_parameter',
      { param: 'url', detail: `the challenge is for ${ch.accepts[0]!.resourceUrl}, not ${url.origin}${url.pathname}` },
      { details: { param: 'url' } },
    )
  const ours = forUrl.filter(
    (r) =>
      (r.scheme === 'exact' || isOurDeferred(r, terms) || isPayableUpto(r) || isOurBatch(r, url, terms)) &&
      r.chainId === terms.chainId &&
      (r.network === terms.network || r.network === terms.caip2) &&
      r.asset.toLowerCase() === terms.usdc &&
      r.amount > 0n &&
      r.amount <= MAX_COUNTED,
  )
  if (ours.length === 0) {
    const offered = [...new Set(forUrl.map((r) => `${r.scheme} on ${r.network} in ${r.asset}`))].join(', ')
    const what = terms.escrow
      ? `exact USDC (${terms.usdc}), upto through Permit2, or deferred into the escrow ${terms.escrow},`
      : `exact USDC (${terms.usdc}) or upto through Permit2`
    throw appError(
      'unsupported_requirements',
      { detail: `this deployment pays ${what} on ${terms.network} / ${terms.caip2}; offered: ${offered}` },
      { details: { network: terms.caip2 } },
    )
  }
  const verdicts = new Map(ours.map((r) => [r, allowance(agent.allowlist, r, url, terms.proxyOrigin)] as const))
  const allowed = ours.filter((r) => verdicts.get(r) !== 'no')
  if (allowed.length === 0) {
    throw appError(
      'seller_not_allowed',
      { detail: `payTo ${ours[0]!.payTo} at ${url.host} is not on the agent's allowlist` },
      {
        details: { pay_to: ours[0]!.payTo, host: url.hostname, namespace: namespaceOf(url, terms.proxyOrigin) ?? null },
      },
    )
  }
  if (body.upto !== undefined && typeof body.upto !== 'boolean')
    throw appError(
      'invalid_parameter',
      { param: 'upto', detail: 'expected true or false' },
      { details: { param: 'upto' } },
    )
  const { rank, uptoRank } = preference(body)
  return {
    ch,
    url,
    method,
    hostOnly: new Set(allowed.filter((r) => verdicts.get(r) === 'if_seen')),
    payable: allowed.sort(
      (a, b) => uptoRank(a) - uptoRank(b) || (a.amount < b.amount ? -1 : a.amount > b.amount ? 1 : rank(a) - rank(b)),
    ),
  }
}

/** A deferred requirement into this deployment's escrow: the only escrow an agent deposits into (an unknown contract could keep the deposit). */
function isOurDeferred(r: Requirement, terms: PayableTerms): boolean {
  const escrow = (r.raw.extra as Record<string, unknown> | undefined)?.escrow
  return (
    r.scheme === 'deferred' &&
    r.version === 2 &&
    terms.escrow !== undefined &&
    typeof escrow === 'string' &&
    escrow.toLowerCase() === terms.escrow &&
    isPayableDeferred(r)
  )
}

/**
 * The order among payable requirements: cheapest first; at the same price a voucher before a
 * transfer (no transaction per call): deferred (offered only where a seller enabled it), then
 * batch-settlement (this platform's own proxy only: isOurBatch), then the rest. upto (its amount a
 * maximum) and batch-settlement go first when asked for (`true`) and last, only where nothing else
 * can be paid, when not: upto unless `upto: true`, batch-settlement when `batch_settlement: false`.
 */
function preference(body: PayBody) {
  if (body.batch_settlement !== undefined && typeof body.batch_settlement !== 'boolean')
    throw appError(
      'invalid_parameter',
      { param: 'batch_settlement', detail: 'expected true or false' },
      { details: { param: 'batch_settlement' } },
    )
  const rank = (r: Requirement) => (r.scheme === 'deferred' ? 0 : r.scheme === 'batch-settlement' ? 1 : 2)
  const asked = (r: Requirement) =>
    r.scheme === 'upto'
      ? body.upto === true
      : r.scheme === 'batch-settlement' && body.batch_settlement !== undefined
        ? body.batch_settlement
        : null
  const uptoRank = (r: Requirement) => {
    const a = asked(r)
    return a === null ? 0 : a ? -1 : 1
  }
  return { rank, uptoRank }
}

/**
 * A batch-settlement requirement of this platform's own proxy (v2): the only place the platform can
 * check its receiverAuthorizer and terms against its registry (platform-terms.ts) before it signs
 * a deposit and vouchers.
 */
function isOurBatch(r: Requirement, url: URL, terms: PayableTerms): boolean {
  return (
    r.scheme === 'batch-settlement' &&
    r.version === 2 &&
    terms.batch === true &&
    terms.proxyOrigin !== undefined &&
    url.origin === terms.proxyOrigin
  )
}

/** The cheapest payable requirement within the agent's per-transaction cap, or 403 `spend_cap_exceeded`. */
export function withinPerTransactionCap(
  agent: Pick<AgentRow, 'cap_per_transaction'>,
  payable: Requirement[],
): Requirement {
  const cap = agent.cap_per_transaction === null ? null : BigInt(agent.cap_per_transaction)
  const req = payable.find((r) => cap === null || r.amount <= cap)
  if (!req) {
    throw appError(
      'spend_cap_exceeded',
      {
        cap: 'per_transaction',
        detail: `the price ${formatUsdc(payable[0]!.amount)} USDC is above the per-transaction cap of ${formatUsdc(cap!)} USDC`,
      },
      {
        details: {
          cap: 'per_transaction',
          limit: String(cap),
          amount: payable[0]!.amount.toString(),
          remaining: String(cap),
        },
      },
    )
  }
  return req
}

/** The seller namespace of a URL on this platform's own proxy. */
function namespaceOf(url: URL, proxyOrigin: string | undefined): string | undefined {
  if (url.origin !== proxyOrigin) return undefined
  return url.pathname.split('/')[1]?.toLowerCase() || undefined
}

/**
 * Whether the allowlist lets the agent pay `r` at `url`: `yes` (an empty list, a `pay_to` entry
 * for its payee, or any entry for this platform's own URLs, whose requirements are checked against
 * the registry: platform-terms.ts), `if_seen` (a `host` entry for a seller elsewhere: its payee must
 * be the one that host asks for), or `no`.
 */
function allowance(
  list: AgentRow['allowlist'],
  r: Requirement,
  url: URL,
  proxyOrigin: string | undefined,
): 'yes' | 'if_seen' | 'no' {
  if (list.length === 0) return 'yes'
  const ns = namespaceOf(url, proxyOrigin)
  const host = url.hostname.toLowerCase()
  if (list.some((e) => e.kind === 'pay_to' && e.value === r.payTo.toLowerCase())) return 'yes'
  if (list.some((e) => e.kind === 'namespace' && ns !== undefined && e.value === ns)) return 'yes'
  if (list.some((e) => e.kind === 'host' && e.value === host)) return url.origin === proxyOrigin ? 'yes' : 'if_seen'
  return 'no'
}

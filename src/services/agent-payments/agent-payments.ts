import { sql, type Kysely } from 'kysely'
import type { PublicClient } from 'viem'
import type { Config } from '../../config.js'
import type { Database } from '../../db/database.js'
import { usdcAbi } from '../../chain/usdc-abi.js'
import { appError, AppError } from '../../errors.js'
import { ChallengeError, parseChallenge, sameResource, type ParsedChallenge, type Requirement } from '../../client/challenge.js'
import { paymentHeader } from '../../client/sign-exact.js'
import { randomNonce, signTransferAuth } from '../../chain/sign-transfer-auth.js'
import type { HexString } from '../../x402/types.js'
import { authCache } from './auth-cache.js'
import { AGENT_KEY_PREFIXES } from '../accounts/agent-keys.js'
import { digestsEqual, hashSecret, isWellFormed, refuseOtherDeployment } from '../accounts/secret-token.js'
import { walletAad } from '../wallets/custodial-wallet.js'
import { reservationWriter } from './insert-batcher.js'
import { openWithdrawalAuthorizations } from '../withdrawals/wallet-reservation.js'
import { decryptSecret } from '../wallets/wallet-crypto.js'
import { MAX_COUNTED, spendWindows, windowsAt, type Unsettled, type Windows } from './spend-windows.js'
import type { AgentPaymentStatus } from './tables.js'
import type { Redis } from 'ioredis'

export interface AgentPaymentsDeps {
  db: Kysely<Database>
  redis: Redis
  key(...parts: string[]): string
  config: Pick<Readonly<Config>, 'chain' | 'masterKey' | 'proxyUrl' | 'deployment' | 'databaseUrl'>
  chain: PublicClient
  /** injectable for tests of the UTC day/month boundaries */
  now?: () => Date
  /** how long a read on-chain balance is trusted (default 1000 ms) */
  balanceTtlMs?: number
  /** cache agent-key look-ups while LISTENing for changes (default true) */
  cacheAuth?: boolean
  onError?(err: unknown): void
}

export interface PayBody {
  url?: unknown
  method?: unknown
  challenge?: unknown
  dry_run?: unknown
}

export interface Headroom {
  /** atomic USDC; null = no cap */
  per_transaction: string | null
  daily: string | null
  monthly: string | null
}

export interface PaymentQuote {
  amount: string
  pay_to: string
  network: string
  asset: string
  x402_version: 1 | 2
  max_timeout_seconds: number
}

export interface SignedPayment extends PaymentQuote {
  object: 'agent_payment'
  payment_id: string
  header: 'X-PAYMENT' | 'PAYMENT-SIGNATURE'
  value: string
  payer: string
  valid_before: string
  headroom: Headroom
}

export interface DryRun {
  object: 'agent_payment_preview'
  would_pay: PaymentQuote | null
  /** headroom after the payment (or now, when it would be refused) */
  headroom: Headroom
  spent: { daily: string; monthly: string }
  balance: string | null
  refusal: { code: string; message: string; [k: string]: unknown } | null
}

export interface AgentRow {
  id: string
  user_id: string
  address: string
  encrypted_key: string
  cap_per_transaction: string | null
  cap_daily: string | null
  cap_monthly: string | null
  allowlist: Array<{ kind: 'pay_to' | 'namespace' | 'host'; value: string }>
}

const METHOD_RE = /^[A-Z]{1,10}$/
const MAX_URL = 2048

/**
 * The buyer side: an agent hands over the 402 challenge it received; the platform picks a
 * requirement it may pay (this deployment's network, USDC, within caps, allowed seller), reserves
 * the amount against the agent's caps atomically (spend-windows.ts), signs the EIP-3009
 * authorization with the agent's custodial key and records the reservation.
 *
 * @example
 *   const p = await agentPayments.pay(agentId, { url, challenge: res.headers.get('payment-required') })
 *   await fetch(url, { headers: { [p.header]: p.value } })
 */
export function agentPaymentsService(deps: AgentPaymentsDeps) {
  const { db, config } = deps
  const now = deps.now ?? (() => new Date())
  const windows = spendWindows(deps.redis, deps.key)
  const balanceTtl = deps.balanceTtlMs ?? 1000
  const balances = new Map<string, { value: bigint; at: number }>()
  // decrypted custodial keys, once per process (bounded; never logged or returned)
  const keys = new Map<string, { box: string; key: Buffer }>()
  const MAX_KEYS = 10_000
  const usdc = config.chain.usdc.address.toLowerCase()
  const proxyOrigin = safeOrigin(config.proxyUrl)
  const writer = reservationWriter(db)
  const keyPrefix = AGENT_KEY_PREFIXES[config.deployment]
  type KeyRow = AgentRow & { key_id: string; revoked_at: Date | null; secret_hash: string }
  // concurrent requests with the same key share one look-up
  const inflight = new Map<string, Promise<KeyRow | undefined>>()
  // look-ups cached while LISTENing for key/agent/allowlist changes (auth-cache.ts), so a revoke
  // still reaches every process at commit
  const cache = deps.cacheAuth === false ? undefined : authCache<KeyRow>({ databaseUrl: config.databaseUrl, onError: deps.onError })
  const touched = new Map<string, number>()

  const agentQuery = () =>
    db
      .selectFrom('agents as a')
      .select(['a.id', 'a.user_id', 'a.address', 'a.encrypted_key', 'a.cap_per_transaction', 'a.cap_daily', 'a.cap_monthly'])
      .select(sql<AgentRow['allowlist']>`coalesce((select json_agg(json_build_object('kind', l.kind, 'value', l.value)) from agent_allowlist l where l.agent_id = a.id), '[]'::json)`.as('allowlist'))

  async function loadAgent(agentId: string): Promise<AgentRow> {
    const row = await agentQuery().where('a.id', '=', agentId).executeTakeFirst()
    if (!row) throw appError('not_found', { what: 'agent' })
    return row
  }

  /**
   * Agent bearer → the agent with its caps and allowlist, in one query. A key of the other
   * deployment is 401 `wrong_deployment_key`, as for API keys; anything else not ours is 401
   * `invalid_api_key`.
   */
  async function authenticate(bearer: string): Promise<AgentRow> {
    refuseOtherDeployment(AGENT_KEY_PREFIXES, config.deployment, bearer)
    if (!isWellFormed(bearer, keyPrefix)) throw appError('invalid_api_key')
    const hash = hashSecret(bearer)
    const load = () => {
      let p = inflight.get(hash)
      if (!p) {
        p = agentQuery()
          .innerJoin('agent_keys as k', 'k.agent_id', 'a.id')
          .select(['k.id as key_id', 'k.revoked_at', 'k.secret_hash'])
          .where('k.secret_hash', '=', hash)
          .executeTakeFirst()
          .finally(() => inflight.delete(hash))
        inflight.set(hash, p)
      }
      return p
    }
    const row = cache ? await cache.get(hash, load) : await load()
    if (!row || !digestsEqual(row.secret_hash, hash) || row.revoked_at !== null) throw appError('invalid_api_key')
    const last = touched.get(row.key_id) ?? 0
    if (Date.now() - last > 60_000) {
      touched.set(row.key_id, Date.now())
      void db.updateTable('agent_keys').set({ last_used_at: sql`now()` }).where('id', '=', row.key_id).execute().catch(() => {})
    }
    const { key_id: _k, revoked_at: _r, secret_hash: _s, ...agent } = row
    return agent
  }

  async function windowTotals(agentId: string, w: Windows): Promise<{ day: bigint; month: bigint }> {
    const r = await db
      .selectFrom('agent_payments')
      .select([sql<string>`coalesce(sum(amount) filter (where day_window = ${w.day}), 0)`.as('day'), sql<string>`coalesce(sum(amount), 0)`.as('month')])
      .where('agent_id', '=', agentId)
      .where('month_window', '=', w.month)
      .where('status', 'in', ['reserved', 'accepted'])
      .executeTakeFirstOrThrow()
    return { day: BigInt(r.day), month: BigInt(r.month) }
  }

  const balanceReads = new Map<string, Promise<bigint>>()

  /**
   * The on-chain balance, never older than `balanceTtl`: one read at a time per wallet, started
   * in the background once the cached value is half that old, so steady traffic never waits on it.
   */
  async function balanceOf(address: string): Promise<bigint> {
    const c = balances.get(address)
    const age = c ? Date.now() - c.at : Infinity
    if (c && age < balanceTtl) {
      if (age > balanceTtl / 2 && !balanceReads.has(address)) void readBalance(address).catch(() => {})
      return c.value
    }
    return readBalance(address)
  }

  function readBalance(address: string): Promise<bigint> {
    let p = balanceReads.get(address)
    if (p) return p
    const at = Date.now()
    p = deps.chain
      .readContract({ address: config.chain.usdc.address, abi: usdcAbi, functionName: 'balanceOf', args: [address as `0x${string}`] })
      .then(
        (value) => {
          if (balances.size >= 10_000 && !balances.has(address)) balances.delete(balances.keys().next().value!)
          balances.set(address, { value, at })
          return value
        },
        () => {
          throw appError('service_unavailable', { detail: 'the chain RPC did not answer; cannot check the agent balance, retry later' })
        },
      )
      .finally(() => balanceReads.delete(address))
    balanceReads.set(address, p)
    return p
  }

  /** Validates the request and narrows the challenge to the requirements this agent may pay, cheapest first. */
  function choose(agent: AgentRow, body: PayBody): { ch: ParsedChallenge; url: URL; method: string; payable: Requirement[] } {
    if (typeof body.url !== 'string' || body.url.length > MAX_URL) throw appError('invalid_parameter', { param: 'url', detail: `expected an absolute http(s) URL of at most ${MAX_URL} characters` }, { details: { param: 'url' } })
    let url: URL
    try {
      url = new URL(body.url)
    } catch {
      throw appError('invalid_parameter', { param: 'url', detail: 'not an absolute URL' }, { details: { param: 'url' } })
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw appError('invalid_parameter', { param: 'url', detail: 'only http and https URLs' }, { details: { param: 'url' } })
    const method = body.method === undefined ? 'GET' : body.method
    if (typeof method !== 'string' || !METHOD_RE.test(method)) throw appError('invalid_parameter', { param: 'method', detail: 'expected an upper-case HTTP method' }, { details: { param: 'method' } })
    let ch: ParsedChallenge
    try {
      ch = parseChallenge(body.challenge)
    } catch (err) {
      if (err instanceof ChallengeError) throw appError('invalid_parameter', { param: 'challenge', detail: err.message }, { details: { param: 'challenge' } })
      throw err
    }
    const forUrl = ch.accepts.filter((r) => sameResource(url.href, r.resourceUrl))
    if (forUrl.length === 0) throw appError('invalid_parameter', { param: 'url', detail: `the challenge is for ${ch.accepts[0]!.resourceUrl}, not ${url.origin}${url.pathname}` }, { details: { param: 'url' } })
    const ours = forUrl.filter(
      (r) => r.scheme === 'exact' && r.chainId === config.chain.chainId && (r.network === config.chain.network || r.network === config.chain.caip2) && r.asset.toLowerCase() === usdc && r.amount > 0n && r.amount <= MAX_COUNTED,
    )
    if (ours.length === 0) {
      const offered = [...new Set(forUrl.map((r) => `${r.scheme} on ${r.network} in ${r.asset}`))].join(', ')
      throw appError('unsupported_requirements', { detail: `this deployment pays exact USDC (${config.chain.usdc.address}) on ${config.chain.network} / ${config.chain.caip2}; offered: ${offered}` }, { details: { network: config.chain.caip2 } })
    }
    const allowed = agent.allowlist.length === 0 ? ours : ours.filter((r) => isAllowed(agent.allowlist, r, url))
    if (allowed.length === 0) {
      throw appError('seller_not_allowed', { detail: `payTo ${ours[0]!.payTo} at ${url.host} is not on the agent's allowlist` }, { details: { pay_to: ours[0]!.payTo, host: url.hostname, namespace: namespaceOf(url) ?? null } })
    }
    return { ch, url, method, payable: allowed.sort((a, b) => (a.amount < b.amount ? -1 : a.amount > b.amount ? 1 : 0)) }
  }

  function namespaceOf(url: URL): string | undefined {
    if (url.origin !== proxyOrigin) return undefined
    return url.pathname.split('/')[1]?.toLowerCase() || undefined
  }

  function isAllowed(list: AgentRow['allowlist'], r: Requirement, url: URL): boolean {
    const ns = namespaceOf(url)
    const host = url.hostname.toLowerCase()
    return list.some((e) => (e.kind === 'pay_to' && e.value === r.payTo.toLowerCase()) || (e.kind === 'host' && e.value === host) || (e.kind === 'namespace' && ns !== undefined && e.value === ns))
  }

  function perTx(agent: AgentRow, payable: Requirement[]): Requirement {
    const cap = agent.cap_per_transaction === null ? null : BigInt(agent.cap_per_transaction)
    const req = payable.find((r) => cap === null || r.amount <= cap)
    if (!req) {
      throw appError(
        'spend_cap_exceeded',
        { cap: 'per_transaction', detail: `the price ${payable[0]!.amount} is above the per-transaction cap ${cap}` },
        { details: { cap: 'per_transaction', limit: String(cap), amount: payable[0]!.amount.toString(), remaining: String(cap) } },
      )
    }
    return req
  }

  function headroom(agent: AgentRow, day: bigint, month: bigint): Headroom {
    const left = (cap: string | null, used: bigint) => (cap === null ? null : (BigInt(cap) > used ? BigInt(cap) - used : 0n).toString())
    return { per_transaction: agent.cap_per_transaction, daily: left(agent.cap_daily, day), monthly: left(agent.cap_monthly, month) }
  }

  /** Caps and balance check plus reservation in one Redis call (rebuilding counters from Postgres when missing). */
  async function reserve(agent: AgentRow, w: Windows, amount: bigint, o: { peek?: boolean; balance: bigint; pay?: Unsettled; nowSeconds: number }) {
    const caps = { daily: agent.cap_daily === null ? null : BigInt(agent.cap_daily), monthly: agent.cap_monthly === null ? null : BigInt(agent.cap_monthly) }
    const opts = { ...o, pay: o.pay ?? { payer: agent.address.toLowerCase(), nonce: `0x${'0'.repeat(64)}`, amount: 0n, validBefore: 0n } }
    let init: { day: bigint; month: bigint } | undefined
    for (let attempt = 0; ; attempt++) {
      const r = await windows.reserve(agent.id, w, amount, caps, { ...opts, init })
      if (attempt >= 3 || (r.kind !== 'init' && r.kind !== 'init-unsettled')) return r
      if (r.kind === 'init') init = await windowTotals(agent.id, w)
      else await windows.rebuildUnsettled(opts.pay.payer, await openAuthorizations(opts.pay.payer, o.nowSeconds))
    }
  }

  /** What the chain may still move from this wallet: signed, not refused, not known settled, not expired. */
  async function openAuthorizations(payer: string, nowSeconds: number): Promise<Unsettled[]> {
    const rows = await db
      .selectFrom('agent_payments')
      .select(['nonce', 'amount', 'valid_before'])
      .where('payer', '=', payer)
      .where('status', 'in', ['reserved', 'accepted'])
      .where('tx_hash', 'is', null)
      .where('valid_before', '>', String(nowSeconds))
      .execute()
    // a pending withdrawal from the wallet is an unsettled authorization too
    return [...rows.map((r) => ({ payer, nonce: r.nonce, amount: BigInt(r.amount), validBefore: BigInt(r.valid_before) })), ...(await openWithdrawalAuthorizations(db, payer, nowSeconds))]
  }

  /** The agent's custodial key, decrypted once per process (and again if its envelope changes). */
  function privateKeyOf(agent: AgentRow): Buffer {
    const hit = keys.get(agent.id)
    if (hit && hit.box === agent.encrypted_key) return hit.key
    const key = Buffer.from(decryptSecret([requireKey()], agent.encrypted_key, walletAad('agent', agent.address)).slice(2), 'hex')
    if (hit) {
      hit.key.fill(0)
      keys.delete(agent.id)
    }
    if (keys.size >= MAX_KEYS) {
      const [oldest, e] = keys.entries().next().value!
      e.key.fill(0)
      keys.delete(oldest)
    }
    keys.set(agent.id, { box: agent.encrypted_key, key })
    return key
  }

  function balanceError(balance: bigint, unsettled: bigint, needed: bigint): AppError {
    const available = balance > unsettled ? balance - unsettled : 0n
    return appError(
      'insufficient_balance',
      { balance: available.toString(), needed: needed.toString() },
      { details: { balance: balance.toString(), unsettled: unsettled.toString(), available: available.toString(), needed: needed.toString() } },
    )
  }

  function capError(agent: AgentRow, cap: 'daily' | 'monthly', amount: bigint, day: bigint, month: bigint): AppError {
    const limit = cap === 'daily' ? agent.cap_daily! : agent.cap_monthly!
    const used = cap === 'daily' ? day : month
    const remaining = BigInt(limit) > used ? BigInt(limit) - used : 0n
    return appError(
      'spend_cap_exceeded',
      { cap, detail: `${used} of ${limit} spent in this UTC ${cap === 'daily' ? 'day' : 'month'}, ${remaining} left, ${amount} asked` },
      { details: { cap, limit, spent: used.toString(), remaining: remaining.toString(), amount: amount.toString(), headroom: headroom(agent, day, month) } },
    )
  }

  function quote(r: Requirement): PaymentQuote {
    return { amount: r.amount.toString(), pay_to: r.payTo, network: r.network, asset: r.asset, x402_version: r.version, max_timeout_seconds: r.maxTimeoutSeconds }
  }

  return {
    authenticate,
    /** Stops LISTENing and forgets cached look-ups and decrypted keys. */
    async close(): Promise<void> {
      await cache?.close()
      for (const e of keys.values()) e.key.fill(0)
      keys.clear()
    },
    /** Signs a payment for the challenge, or (dry_run) says what would be paid and the headroom. */
    async pay(who: string | AgentRow, body: PayBody): Promise<SignedPayment | DryRun> {
      if (body.dry_run !== undefined && typeof body.dry_run !== 'boolean') throw appError('invalid_parameter', { param: 'dry_run', detail: 'expected true or false' }, { details: { param: 'dry_run' } })
      const agent = typeof who === 'string' ? await loadAgent(who) : who
      const at = now()
      const w = windowsAt(at)
      if (body.dry_run) return preview(agent, body, w)
      const { ch, url, method, payable } = choose(agent, body)
      const req = perTx(agent, payable)
      const balance = await balanceOf(agent.address)
      if (balance < req.amount) throw balanceError(balance, 0n, req.amount)
      const nowSeconds = Math.floor(at.getTime() / 1000)
      // as the official clients: valid from 10 minutes ago until the requirement's timeout
      const a = { from: agent.address as HexString, to: req.payTo as HexString, value: req.amount.toString(), validAfter: String(nowSeconds - 600), validBefore: String(nowSeconds + req.maxTimeoutSeconds), nonce: randomNonce() as HexString }
      const pay: Unsettled = { payer: agent.address.toLowerCase(), nonce: a.nonce, amount: req.amount, validBefore: BigInt(a.validBefore) }
      const r = await reserve(agent, w, req.amount, { balance, pay, nowSeconds })
      if (r.kind === 'balance') throw balanceError(balance, r.unsettled, req.amount)
      if (r.kind === 'over') throw capError(agent, r.cap, req.amount, r.day, r.month)
      if (r.kind !== 'ok') throw new Error(`unexpected spend reservation result ${r.kind}`)
      try {
        const token = req.extra ?? { name: config.chain.usdc.name, version: config.chain.usdc.version }
        const signature = signTransferAuth(privateKeyOf(agent), { name: token.name, version: token.version, chainId: config.chain.chainId, verifyingContract: req.asset }, {
          from: a.from,
          to: a.to,
          value: req.amount,
          validAfter: BigInt(a.validAfter),
          validBefore: BigInt(a.validBefore),
          nonce: a.nonce,
        })
        const payload = { signature, authorization: a }
        const id = await writer.write({
          agent_id: agent.id,
          x402_version: req.version,
          url: url.href,
          method,
          network: req.network,
          asset: req.asset.toLowerCase(),
          payer: agent.address.toLowerCase(),
          pay_to: req.payTo.toLowerCase(),
          amount: req.amount.toString(),
          nonce: a.nonce,
          valid_after: a.validAfter,
          valid_before: a.validBefore,
          day_window: w.day,
          month_window: w.month,
        })
        const { header, value } = paymentHeader(ch, req, payload)
        return { object: 'agent_payment', payment_id: id, header, value, ...quote(req), payer: agent.address, valid_before: a.validBefore, headroom: headroom(agent, r.day, r.month) }
      } catch (err) {
        await Promise.all([windows.adjust(agent.id, w, -req.amount), windows.releaseUnsettled(pay)]).catch(() => {})
        throw err
      }
    },

    /** The agent reports what the seller answered; a rejection releases the reserved amount. */
    async outcome(agentId: string, id: string, body: { status?: unknown; payment_response?: unknown }) {
      if (!['accepted', 'rejected', 'error'].includes(body.status as string)) throw appError('invalid_parameter', { param: 'status', detail: 'expected accepted | rejected | error' }, { details: { param: 'status' } })
      const response = body.payment_response === undefined || body.payment_response === null ? null : body.payment_response
      if (response !== null && (typeof response !== 'object' || Array.isArray(response) || JSON.stringify(response).length > 4096)) {
        throw appError('invalid_parameter', { param: 'payment_response', detail: 'expected the decoded payment response object (at most 4 KB)' }, { details: { param: 'payment_response' } })
      }
      const row = await find(agentId, id)
      const status = body.status as 'accepted' | 'rejected' | 'error'
      const tx = response && typeof (response as Record<string, unknown>).transaction === 'string' && /^0x[0-9a-fA-F]{64}$/.test((response as { transaction: string }).transaction) ? (response as { transaction: string }).transaction : null
      const data = response === null ? null : JSON.stringify(response)
      if (status === 'error' || row.status !== 'reserved') {
        // error: unknown whether the seller used it; the expiry sweep decides from the chain
        await db.insertInto('agent_payment_events').values({ agent_payment_id: row.id, type: status, data }).execute()
        return this.get(agentId, id)
      }
      const next: AgentPaymentStatus = status
      const updated = await db
        .updateTable('agent_payments')
        .set({ status: next, payment_response: data, tx_hash: tx, updated_at: sql`now()` })
        .where('id', '=', row.id)
        .where('status', '=', 'reserved')
        .returning(['id'])
        .executeTakeFirst()
      if (updated) {
        await db.insertInto('agent_payment_events').values({ agent_payment_id: row.id, type: status, data }).execute()
        if (next === 'rejected') {
          await windows.adjust(agentId, { day: row.day_window, month: row.month_window }, -BigInt(row.amount))
          await windows.releaseUnsettled({ payer: row.payer, nonce: row.nonce, amount: BigInt(row.amount) })
        } else if (tx) await windows.releaseUnsettled({ payer: row.payer, nonce: row.nonce, amount: BigInt(row.amount) }, settledReleaseAt())
      }
      return this.get(agentId, id)
    },

    /**
     * What the agent may still spend, for an agent that budgets itself: its caps, what it spent in
     * the current UTC day and month, the headroom left, its wallet's USDC balance (cached as for
     * payments), what is signed but not settled yet, and its allowlist. The same counters `pay` uses.
     */
    async status(agent: AgentRow) {
      const at = now()
      let balance: bigint | null = null
      let balanceError: string | null = null
      try {
        balance = await balanceOf(agent.address)
      } catch {
        balanceError = 'the chain RPC did not answer; the balance is unavailable, retry later'
      }
      const r = await reserve(agent, windowsAt(at), 0n, { peek: true, balance: balance ?? 0n, nowSeconds: Math.floor(at.getTime() / 1000) })
      const [day, month, unsettled] = 'day' in r ? [r.day, r.month, r.unsettled] : [0n, 0n, 0n]
      return {
        object: 'agent_status' as const,
        address: agent.address,
        spend_caps: { per_transaction: agent.cap_per_transaction, daily: agent.cap_daily, monthly: agent.cap_monthly },
        spent: { daily: day.toString(), monthly: month.toString() },
        headroom: headroom(agent, day, month),
        balance: balance?.toString() ?? null,
        unsettled: unsettled.toString(),
        available: balance === null ? null : (balance > unsettled ? balance - unsettled : 0n).toString(),
        balance_error: balanceError,
        allowlist: agent.allowlist,
      }
    },

    async get(agentId: string, id: string) {
      const row = await find(agentId, id)
      // payments to this platform's own proxy: the seller-side record knows the settlement
      const seller = await db.selectFrom('payments').select(['id', 'status', 'tx_hash']).where('payer', '=', row.payer).where('nonce', '=', row.nonce).executeTakeFirst()
      return {
        object: 'agent_payment' as const,
        id: row.id,
        status: row.status,
        url: row.url,
        method: row.method,
        amount: row.amount,
        pay_to: row.pay_to,
        payer: row.payer,
        network: row.network,
        x402_version: row.x402_version,
        valid_before: row.valid_before,
        transaction: row.tx_hash ?? seller?.tx_hash ?? null,
        settlement: seller ? { payment_id: seller.id, status: seller.status } : null,
        created_at: row.created_at.toISOString(),
        updated_at: row.updated_at.toISOString(),
      }
    },

    /**
     * Reservations whose authorization has expired unused are released; ones the seller did use
     * (authorizationState on chain) count as accepted. Runs on a timer in the web role.
     */
    async sweep(limit = 200): Promise<{ expired: number; spent: number }> {
      const nowS = Math.floor(now().getTime() / 1000)
      const rows = await db.selectFrom('agent_payments').selectAll().where('status', '=', 'reserved').where('valid_before', '<', String(nowS)).orderBy('valid_before').limit(limit).execute()
      let expired = 0
      let spent = 0
      for (const row of rows) {
        let used = false
        try {
          used = await deps.chain.readContract({ address: config.chain.usdc.address, abi: usdcAbi, functionName: 'authorizationState', args: [row.payer as `0x${string}`, row.nonce as `0x${string}`] })
        } catch {
          continue // chain down: try again next sweep
        }
        const next: AgentPaymentStatus = used ? 'accepted' : 'expired'
        const u = await db.updateTable('agent_payments').set({ status: next, updated_at: sql`now()` }).where('id', '=', row.id).where('status', '=', 'reserved').returning('id').executeTakeFirst()
        if (!u) continue
        await db.insertInto('agent_payment_events').values({ agent_payment_id: row.id, type: next, data: null }).execute()
        if (used) spent++
        else {
          expired++
          await windows.adjust(row.agent_id, { day: row.day_window, month: row.month_window }, -BigInt(row.amount))
        }
        await windows.releaseUnsettled({ payer: row.payer, nonce: row.nonce, amount: BigInt(row.amount) }, used ? settledReleaseAt() : undefined)
      }
      // payments to this platform's own endpoints: once the seller side settled them the funds left the wallet
      const settled = await db
        .selectFrom('agent_payments as ap')
        .innerJoin('payments as p', (j) => j.onRef('p.payer', '=', 'ap.payer').onRef('p.nonce', '=', 'ap.nonce'))
        .select(['ap.id', 'ap.payer', 'ap.nonce', 'ap.amount', 'p.tx_hash'])
        .where('ap.status', 'in', ['reserved', 'accepted'])
        .where('ap.tx_hash', 'is', null)
        .where('ap.valid_before', '>=', String(nowS))
        .where('p.status', '=', 'settled')
        .limit(limit)
        .execute()
      for (const row of settled) {
        await db.updateTable('agent_payments').set({ tx_hash: row.tx_hash, updated_at: sql`now()` }).where('id', '=', row.id).where('tx_hash', 'is', null).execute()
        await windows.releaseUnsettled({ payer: row.payer, nonce: row.nonce, amount: BigInt(row.amount) }, settledReleaseAt())
      }
      return { expired, spent }
    },
  }

  async function preview(agent: AgentRow, body: PayBody, w: Windows): Promise<DryRun> {
    let amount = 0n
    let wouldPay: PaymentQuote | null = null
    let refusal: DryRun['refusal'] = null
    let balance: bigint | null = null
    try {
      const { payable } = choose(agent, body)
      const req = perTx(agent, payable)
      amount = req.amount
      wouldPay = quote(req)
      balance = await balanceOf(agent.address)
    } catch (err) {
      if (!(err instanceof AppError) || !['seller_not_allowed', 'spend_cap_exceeded', 'insufficient_balance', 'unsupported_requirements'].includes(err.code)) throw err
      refusal = { code: err.code, message: err.message, ...err.details }
    }
    const r = await reserve(agent, w, amount, { peek: true, balance: balance ?? 0n, nowSeconds: Math.floor(now().getTime() / 1000) })
    const day = 'day' in r ? r.day : 0n
    const month = 'month' in r ? r.month : 0n
    const unsettled = 'unsettled' in r ? r.unsettled : 0n
    if (!refusal && wouldPay && balance !== null && balance - unsettled < amount) {
      const e = balanceError(balance, unsettled, amount)
      refusal = { code: e.code, message: e.message, ...e.details }
    }
    if (!refusal && wouldPay) {
      const over = (agent.cap_daily !== null && day + amount > BigInt(agent.cap_daily) && 'daily') || (agent.cap_monthly !== null && month + amount > BigInt(agent.cap_monthly) && 'monthly')
      if (over) {
        const e = capError(agent, over, amount, day, month)
        refusal = { code: e.code, message: e.message, ...e.details }
      }
    }
    const after = refusal ? 0n : amount
    return { object: 'agent_payment_preview', would_pay: refusal ? null : wouldPay, headroom: headroom(agent, day + after, month + after), spent: { daily: day.toString(), monthly: month.toString() }, balance: balance?.toString() ?? null, refusal }
  }

  async function find(agentId: string, id: string) {
    if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(id)) throw appError('not_found', { what: 'payment' })
    const row = await db.selectFrom('agent_payments').selectAll().where('id', '=', id).where('agent_id', '=', agentId).executeTakeFirst()
    if (!row) throw appError('not_found', { what: 'payment' })
    return row
  }

  /** A settled payment stays counted until every process has re-read the balance after it. */
  function settledReleaseAt(): number {
    return Math.ceil((now().getTime() + balanceTtl) / 1000) + 1
  }

  function requireKey(): Buffer {
    if (!config.masterKey) throw appError('service_unavailable', { detail: 'TOLLGATE_MASTER_KEY is not configured; agent wallets cannot sign' })
    return config.masterKey
  }
}

function safeOrigin(u: string): string | undefined {
  try {
    return new URL(u).origin
  } catch {
    return undefined
  }
}

export type AgentPaymentsService = ReturnType<typeof agentPaymentsService>

import { randomBytes } from 'node:crypto'
import { sql, type Kysely } from 'kysely'
import { getAddress, parseGwei, type Hex, type TransactionReceipt } from 'viem'
import { MULTICALL3_ADDRESS } from '../../chain/multicall3-abi.js'
import { eip3009Types, usdcAbi } from '../../chain/usdc-abi.js'
import type { Database, Payment } from '../../db/database.js'
import type { Deps } from '../../deps.js'
import { errorSummary } from '../../logger.js'
import { invalid } from '../accounts/validate.js'
import { emitEvent } from '../events/outbox.js'
import { createSpendWindows, spendWindowTotals, windowsAt, type SpendWindows } from '../agent-payments/spend-windows.js'
import {
  findAuthorizationOutcome,
  reasonFromRevert,
  transferCallData,
  usedAuthorizations,
} from '../settlement/chain-ops.js'
import { broadcast, createRelayerLock, relayersFromKeys, signRelayerTx, type Relayer } from '../settlement/relayer.js'
import { custodialAccount } from '../wallets/custodial-wallet.js'
import type { Topup } from '../../db/topups-tables.js'

export interface TopupLogger {
  info(obj: object, msg: string): void
  error(obj: object, msg: string): void
}

export interface TopupOptions {
  /** attempts before a top-up is `failed` (default 5) */
  maxAttempts?: number
  /** first retry delay; doubles per attempt, capped at maxBackoffMs (default 30 s) */
  backoffMs?: number
  maxBackoffMs?: number
  /** how long one worker owns a top-up while it works on it (default 3 min) */
  leaseMs?: number
  receiptTimeoutMs?: number
  /** lifetime of a signed authorization (default 1 day); an expired one is re-signed */
  authorizationTtlS?: number
  maxFeePerGasCap?: bigint
  relayerKeys?: readonly Hex[]
  logger?: TopupLogger
}

export interface TopupView {
  object: 'top_up'
  id: string
  agent: string
  need: number
  status: Topup['status']
  amount: string
  funding_wallet: string | null
  tx_hash: string | null
  attempts: number
  error: string | null
  created_at: string
  updated_at: string
}

export function topupView(r: Topup): TopupView {
  return {
    object: 'top_up',
    id: r.id,
    agent: r.agent_address,
    need: r.need_seq,
    status: r.status,
    amount: r.amount,
    funding_wallet: r.funding_address,
    tx_hash: r.tx_hash,
    attempts: r.attempts,
    error: r.error,
    created_at: new Date(r.created_at).toISOString(),
    updated_at: new Date(r.updated_at).toISOString(),
  }
}

/** The largest page of top-ups, and the default (so a client that ignores paging sees what it did before paging existed). */
export const TOPUPS_PAGE_MAX = 100

export interface TopupsPage {
  object: 'list'
  data: TopupView[]
  has_more: boolean
  next_cursor: string | null
}

/**
 * One page of an agent's top-ups, newest need first, and the cursor of the next page
 * (GET /v1/agents/{address}/top-ups). Keyset paging on (agent_id, need_seq), the unique key, so a
 * top-up opened between two pages never shifts the later pages.
 *
 * @example
 *   const first = await topupsPage(db, agent.id, { limit: 50 })
 *   const second = first.next_cursor ? await topupsPage(db, agent.id, { limit: 50, cursor: first.next_cursor }) : undefined
 */
export async function topupsPage(
  db: Kysely<Database>,
  agentId: string,
  opts: { limit?: number; cursor?: string } = {},
): Promise<TopupsPage> {
  const limit = opts.limit ?? TOPUPS_PAGE_MAX
  if (!Number.isInteger(limit) || limit < 1 || limit > TOPUPS_PAGE_MAX)
    throw invalid('limit', `expected an integer from 1 to ${TOPUPS_PAGE_MAX}`)
  const before = opts.cursor === undefined ? undefined : decodeTopupsCursor(opts.cursor)
  let query = db.selectFrom('topups').selectAll().where('agent_id', '=', agentId)
  if (before !== undefined) query = query.where('need_seq', '<', before)
  const rows = await query
    .orderBy('need_seq', 'desc')
    .limit(limit + 1)
    .execute()
  const hasMore = rows.length > limit
  const data = rows.slice(0, limit).map(topupView)
  const last = data.at(-1)
  return {
    object: 'list',
    data,
    has_more: hasMore,
    next_cursor: hasMore && last ? encodeTopupsCursor(last.need) : null,
  }
}

/** Top-ups of one agent, newest need first: the first `limit` of them. */
export async function listTopups(db: Kysely<Database>, agentId: string, limit = TOPUPS_PAGE_MAX): Promise<TopupView[]> {
  return (await topupsPage(db, agentId, { limit })).data
}

// a cursor is the need_seq of the last top-up of the page, opaque to clients (as the history cursors)
function encodeTopupsCursor(needSeq: number): string {
  return Buffer.from(JSON.stringify(['need', needSeq])).toString('base64url')
}

function decodeTopupsCursor(c: string): number {
  try {
    const parts = JSON.parse(Buffer.from(c, 'base64url').toString('utf8')) as unknown
    if (
      Array.isArray(parts) &&
      parts.length === 2 &&
      parts[0] === 'need' &&
      Number.isSafeInteger(parts[1]) &&
      (parts[1] as number) >= 0
    )
      return parts[1] as number
  } catch {
    // not JSON: refused below
  }
  throw invalid('cursor', 'not a cursor returned by this list')
}

/** A failure that counts as an attempt (and is retried with backoff). */
class AttemptFailed extends Error {}

interface Candidate {
  id: string
  user_id: string
  name: string
  address: string
  threshold: string
  amount: string
  cap_daily: string | null
  cap_monthly: string | null
  agent_updated_at: Date
  last_seq: number | null
  last_status: Topup['status'] | null
  last_confirmed_block: string | null
  last_updated_at: Date | null
}

/**
 * What the agent's caps still let it spend now: the smaller of its daily and monthly cap less
 * what is counted against that window (the counters agent payments reserve in, so signed but
 * unsettled payments count); null when it has neither cap.
 */
async function capHeadroom(db: Kysely<Database>, windows: SpendWindows, c: Candidate): Promise<bigint | null> {
  if (c.cap_daily === null && c.cap_monthly === null) return null
  const caps = {
    daily: c.cap_daily === null ? null : BigInt(c.cap_daily),
    monthly: c.cap_monthly === null ? null : BigInt(c.cap_monthly),
  }
  const at = new Date()
  const w = windowsAt(at)
  const pay = { payer: c.address.toLowerCase(), nonce: `0x${'0'.repeat(64)}`, amount: 0n, validBefore: 0n }
  let init: { day: bigint; month: bigint } | undefined
  for (let i = 0; ; i++) {
    const r = await windows.reserve(c.id, w, 0n, caps, {
      peek: true,
      pay,
      init,
      nowSeconds: Math.floor(at.getTime() / 1000),
    })
    if (r.kind !== 'init') {
      if (!('day' in r)) throw new Error(`unexpected spend-window answer ${r.kind}`)
      const left = [
        caps.daily === null ? null : caps.daily - r.day,
        caps.monthly === null ? null : caps.monthly - r.month,
      ].filter((x): x is bigint => x !== null)
      return left.reduce((a, b) => (b < a ? b : a))
    }
    if (i >= 3) throw new Error('the spend-cap counters could not be rebuilt')
    init = await spendWindowTotals(db, c.id, w)
  }
}

const silent: TopupLogger = { info: () => {}, error: () => {} }

/**
 * Agent top-ups: `check` reads the balances of every agent with top-ups enabled (one multicall
 * per page, all at one block) and opens a need for each one below its threshold; `processDue`
 * pays each open need from the user's funding wallet with an EIP-3009 authorization that a
 * relayer submits. docs/topups.md explains why a need is paid at most once.
 *
 * @example
 *   const topups = createTopups(deps)
 *   await topups.runOnce() // check + pay what is due
 */
export function createTopups(deps: Deps, opts: TopupOptions = {}) {
  const { db, chain, config } = deps
  const maxAttempts = opts.maxAttempts ?? 5
  const backoffMs = opts.backoffMs ?? 30_000
  const maxBackoffMs = opts.maxBackoffMs ?? 15 * 60_000
  const leaseMs = opts.leaseMs ?? 180_000
  const receiptTimeoutMs = opts.receiptTimeoutMs ?? 60_000
  const ttlS = opts.authorizationTtlS ?? 86_400
  const feeCap = opts.maxFeePerGasCap ?? parseGwei('100')
  const relayers = relayersFromKeys(opts.relayerKeys ?? config.relayerKeys)
  const lock = createRelayerLock(deps.redis, deps.key)
  const log = opts.logger ?? silent
  const usdc = getAddress(config.chain.usdc.address)
  const windows = createSpendWindows(deps.redis, deps.key)

  /** Runs fn holding a free relayer's lock (the settlement lock, so nonces never collide); null when all are busy. */
  async function withRelayer<T>(fn: (r: Relayer) => Promise<T>): Promise<{ value: T } | null> {
    const start = Math.floor(Math.random() * Math.max(1, relayers.length))
    for (let i = 0; i < relayers.length; i++) {
      const r = relayers[(start + i) % relayers.length]!
      const token = await lock.acquire(r.address)
      if (!token) continue
      try {
        return { value: await fn(r) }
      } finally {
        await lock.release(r.address, token)
      }
    }
    return null
  }

  /** Whether `c` (seen at `block` with `balance`) is a new need. */
  function isNewNeed(c: Candidate, balance: bigint, block: bigint): boolean {
    if (balance >= BigInt(c.threshold)) return false
    switch (c.last_status) {
      case null:
        return true
      case 'pending':
      case 'submitted':
        return false
      // the balance must be read after the refill landed, or a stale read would open a second need
      case 'confirmed':
        return c.last_confirmed_block !== null && block > BigInt(c.last_confirmed_block)
      // a failed need stays reported until the user touches the agent's settings (re-arms it)
      case 'failed':
        return c.last_updated_at !== null && c.agent_updated_at > c.last_updated_at
    }
  }

  async function balancesAt(addresses: string[], blockNumber: bigint): Promise<bigint[]> {
    return chain.multicall({
      multicallAddress: MULTICALL3_ADDRESS,
      allowFailure: false,
      blockNumber,
      contracts: addresses.map((a) => ({
        address: usdc,
        abi: usdcAbi,
        functionName: 'balanceOf' as const,
        args: [getAddress(a)] as const,
      })),
    }) as Promise<bigint[]>
  }

  /** Opens a need for every enabled agent below its threshold; returns how many this call created. */
  async function check(pageSize = 500): Promise<number> {
    const block = await chain.getBlockNumber({ cacheTime: 0 })
    let created = 0
    let after = '00000000-0000-0000-0000-000000000000'
    for (;;) {
      const { rows } = await sql<Candidate>`
        select a.id, a.user_id, a.name, a.address, a.top_up_threshold as threshold, a.top_up_amount as amount, a.cap_daily, a.cap_monthly, a.updated_at as agent_updated_at,
               t.need_seq as last_seq, t.status as last_status, t.confirmed_block as last_confirmed_block, t.updated_at as last_updated_at
        from agents a
        left join lateral (select need_seq, status, confirmed_block, updated_at from topups where agent_id = a.id order by need_seq desc limit 1) t on true
        where a.top_up_enabled and a.top_up_amount > 0 and a.id > ${after}
        order by a.id limit ${pageSize}`.execute(db)
      if (rows.length === 0) break
      after = rows[rows.length - 1]!.id
      const eligible = rows.filter((c) => c.last_status !== 'pending' && c.last_status !== 'submitted')
      const balances = eligible.length
        ? await balancesAt(
            eligible.map((c) => c.address),
            block,
          )
        : []
      for (const [i, c] of eligible.entries()) {
        const balance = balances[i]!
        if (!isNewNeed(c, balance, block)) continue
        // never put in more than the caps still let the agent spend (issue 33): the wallet then holds
        // at most that headroom, so top-ups cannot fund spending past the caps
        const headroom = await capHeadroom(db, windows, c)
        const amount =
          headroom === null || headroom - balance >= BigInt(c.amount) ? BigInt(c.amount) : headroom - balance
        if (amount <= 0n) {
          log.info(
            {
              agent: c.address,
              balance: balance.toString(),
              threshold: c.threshold,
              headroom: headroom!.toString(),
              reason: 'spend_caps',
            },
            'top-up not opened: the balance already covers what the spend caps still allow',
          )
          continue
        }
        // the unique (agent_id, need_seq) and one-open-per-agent indexes decide any race
        const r = await db.transaction().execute(async (trx) => {
          const opened = await trx
            .insertInto('topups')
            .values({
              agent_id: c.id,
              need_seq: (c.last_seq ?? 0) + 1,
              agent_address: c.address,
              amount: amount.toString(),
              threshold: c.threshold,
              balance_seen: balance.toString(),
              block_seen: block,
            })
            .onConflict((oc) => oc.doNothing())
            .returning('id')
            .executeTakeFirst()
          // the alert is written with the need it opened (docs/api.md, "Webhooks")
          if (opened)
            await emitEvent(trx, {
              userId: c.user_id,
              type: 'agent.balance_low',
              data: {
                agent: c.address,
                agent_name: c.name,
                balance: balance.toString(),
                threshold: c.threshold,
                topup_id: opened.id,
              },
            })
          return opened
        })
        if (r) {
          created++
          log.info(
            {
              topup: r.id,
              agent: c.address,
              balance: balance.toString(),
              threshold: c.threshold,
              amount: amount.toString(),
              ...(amount < BigInt(c.amount) ? { configured: c.amount, limitedBy: 'spend_caps' } : {}),
            },
            'top-up need opened',
          )
        }
      }
      if (rows.length < pageSize) break
    }
    return created
  }

  /** Takes the lease on one due open top-up (so only one worker works on it). */
  async function claim(id: string): Promise<Topup | undefined> {
    return db
      .updateTable('topups')
      .set({ locked_until: sql`now() + ${`${leaseMs} milliseconds`}::interval` })
      .where('id', '=', id)
      .where('status', 'in', ['pending', 'submitted'])
      .where('next_attempt_at', '<=', sql<Date>`now()`)
      .where((eb) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<', sql<Date>`now()`)]))
      .returningAll()
      .executeTakeFirst()
  }

  async function update(id: string, set: Record<string, unknown>): Promise<void> {
    await db
      .updateTable('topups')
      .set({ ...set, updated_at: sql`now()` })
      .where('id', '=', id)
      .execute()
  }

  /** Moves a top-up to its end state and writes its webhook event, in one transaction. */
  async function finish(t: Topup, set: Record<string, unknown>, type: 'topup.completed' | 'topup.failed') {
    await db.transaction().execute(async (trx) => {
      await trx
        .updateTable('topups')
        .set({ ...set, updated_at: sql`now()` })
        .where('id', '=', t.id)
        .execute()
      const agent = await trx
        .selectFrom('agents')
        .select(['user_id', 'name'])
        .where('id', '=', t.agent_id)
        .executeTakeFirst()
      if (agent)
        await emitEvent(trx, {
          userId: agent.user_id,
          type,
          data: {
            topup_id: t.id,
            agent: t.agent_address,
            agent_name: agent.name,
            amount: t.amount,
            tx_hash: (set.tx_hash as string | undefined) ?? null,
            error: (set.error as string | null | undefined) ?? null,
          },
        })
    })
  }

  async function confirm(t: Topup, txHash: string, blockNumber: bigint): Promise<void> {
    await finish(
      t,
      { status: 'confirmed', tx_hash: txHash, confirmed_block: blockNumber, locked_until: null, error: null },
      'topup.completed',
    )
    log.info({ topup: t.id, agent: t.agent_address, amount: t.amount, txHash }, 'top-up confirmed')
  }

  /** The stored authorization as the settlement calldata builder expects it. */
  function asPayment(t: Topup): Payment {
    return {
      payer: t.funding_address,
      pay_to: t.agent_address,
      value: t.amount,
      valid_after: t.valid_after,
      valid_before: t.valid_before,
      nonce: t.auth_nonce,
      signature: t.signature,
    } as unknown as Payment
  }

  /** Signs a fresh authorization from the user's funding wallet and stores it on the row. */
  async function authorize(t: Topup): Promise<Topup> {
    const w = await db
      .selectFrom('agents')
      .innerJoin('funding_wallets', 'funding_wallets.user_id', 'agents.user_id')
      .select(['funding_wallets.address', 'funding_wallets.encrypted_key'])
      .where('agents.id', '=', t.agent_id)
      .executeTakeFirst()
    if (!w) throw new AttemptFailed('the user has no funding wallet')
    if (!config.masterKey) throw new AttemptFailed('TOLLGATE_MASTER_KEY is not configured')
    const account = custodialAccount([config.masterKey], 'funding', w.address, w.encrypted_key)
    const now = Math.floor(Date.now() / 1000)
    const message = {
      from: account.address,
      to: getAddress(t.agent_address),
      value: BigInt(t.amount),
      validAfter: BigInt(now - 600),
      validBefore: BigInt(now + ttlS),
      nonce: `0x${randomBytes(32).toString('hex')}` as Hex,
    }
    const signature = await account.signTypedData({
      domain: {
        name: config.chain.usdc.name,
        version: config.chain.usdc.version,
        chainId: config.chain.chainId,
        verifyingContract: usdc,
      },
      types: { TransferWithAuthorization: eip3009Types.TransferWithAuthorization },
      primaryType: 'TransferWithAuthorization',
      message,
    })
    const set = {
      funding_address: account.address,
      auth_nonce: message.nonce,
      valid_after: message.validAfter.toString(),
      valid_before: message.validBefore.toString(),
      signature,
    }
    await update(t.id, set)
    return { ...t, ...set }
  }

  const authUsed = (t: Topup) =>
    chain.readContract({
      address: usdc,
      abi: usdcAbi,
      functionName: 'authorizationState',
      args: [getAddress(t.funding_address!), t.auth_nonce as Hex],
    })

  function landed(t: Topup, receipt: TransactionReceipt): boolean {
    return (
      receipt.status === 'success' &&
      usedAuthorizations(usdc, receipt.logs).has(`${t.funding_address!.toLowerCase()}:${t.auth_nonce!.toLowerCase()}`)
    )
  }

  /** One attempt at a claimed top-up. Never signs a second authorization while the first can still be used. */
  async function attempt(t: Topup): Promise<Topup['status']> {
    // an earlier submission: its receipt decides
    if (t.status === 'submitted' && t.tx_hash) {
      const receipt = await chain.getTransactionReceipt({ hash: t.tx_hash as Hex }).catch(() => null)
      if (receipt && landed(t, receipt)) {
        await confirm(t, t.tx_hash, receipt.blockNumber)
        return 'confirmed'
      }
    }
    if (t.signature && t.auth_nonce && t.funding_address) {
      if (await authUsed(t)) {
        // used by some transaction we lost track of: find it; that is the refill
        const outcome = await findAuthorizationOutcome(chain, usdc, asPayment(t), {
          chunkBlocks: deps.config.settlement.logChunkBlocks,
        })
        if (outcome.kind === 'used') {
          const receipt = await chain.getTransactionReceipt({ hash: outcome.txHash })
          await confirm(t, outcome.txHash, receipt.blockNumber)
          return 'confirmed'
        }
        throw new AttemptFailed(
          outcome.kind === 'canceled'
            ? 'the authorization was canceled'
            : 'the authorization is used but its transaction was not found',
        )
      }
      // unused and about to expire: it can never be used once expired, so a new one is safe
      if (BigInt(t.valid_before!) < BigInt(Math.floor(Date.now() / 1000) + 120)) t = await authorize(t)
    } else {
      t = await authorize(t)
    }

    const funding = await chain.readContract({
      address: usdc,
      abi: usdcAbi,
      functionName: 'balanceOf',
      args: [getAddress(t.funding_address!)],
    })
    if (funding < BigInt(t.amount))
      throw new AttemptFailed(
        `insufficient_funds: the funding wallet ${t.funding_address} holds ${funding}, the top-up needs ${t.amount}`,
      )

    const data = transferCallData(asPayment(t))
    const chainId = config.chain.chainId
    const result = await withRelayer(async (relayer) => {
      let gas: bigint
      try {
        gas = await chain.estimateGas({ account: relayer.address, to: usdc, data })
      } catch (err) {
        throw new AttemptFailed(
          reasonFromRevert(String((err as Error).message)) + ': ' + String((err as Error).message).split('\n')[0],
        )
      }
      const signed = await signRelayerTx(chain, relayer, {
        to: usdc,
        data,
        gas: (gas * 13n) / 10n,
        chainId,
        maxFeePerGasCap: feeCap,
      })
      // recorded before broadcast, so a crash leaves a hash to look for
      await update(t.id, { status: 'submitted', tx_hash: signed.hash, relayer: relayer.address.toLowerCase() })
      await broadcast(chain, signed.raw)
      const receipt = await chain
        .waitForTransactionReceipt({ hash: signed.hash, timeout: receiptTimeoutMs })
        .catch(() => null)
      return { hash: signed.hash, receipt }
    })
    if (!result) {
      // every relayer busy settling: not the top-up's fault, so no attempt is counted
      await update(t.id, { locked_until: null, next_attempt_at: new Date(Date.now() + 2_000) })
      return t.status
    }
    const { hash, receipt } = result.value
    if (!receipt) {
      // still in flight: stay `submitted`; the next run reads its receipt or the authorization state
      await update(t.id, { locked_until: null, next_attempt_at: new Date(Date.now() + 5_000) })
      return 'submitted'
    }
    if (!landed({ ...t, tx_hash: hash }, receipt)) throw new AttemptFailed(`the transaction ${hash} reverted`)
    await confirm(t, hash, receipt.blockNumber)
    return 'confirmed'
  }

  async function recordFailure(t: Topup, err: unknown): Promise<Topup['status']> {
    const attempts = t.attempts + 1
    // shown to the user (GET /v1/agents/{address}/top-ups) and logged: viem's full message would carry
    // the operator's RPC URL, which often holds the provider's API key
    const error = errorSummary(err)
    if (attempts >= maxAttempts) {
      await finish(t, { status: 'failed', attempts, error, locked_until: null }, 'topup.failed')
      log.error({ topup: t.id, agent: t.agent_address, amount: t.amount, attempts, error }, 'top-up failed')
      return 'failed'
    }
    const delay = Math.min(backoffMs * 2 ** (attempts - 1), maxBackoffMs)
    // back to pending: if a submission exists it did not land (checked first on the next attempt)
    await update(t.id, {
      status: 'pending',
      attempts,
      error,
      locked_until: null,
      next_attempt_at: new Date(Date.now() + delay),
    })
    log.info(
      { topup: t.id, agent: t.agent_address, attempts, retryInMs: delay, error },
      'top-up attempt failed; will retry',
    )
    return 'pending'
  }

  /** Works on every due open top-up this worker can lease; returns what happened to each. */
  async function processDue(limit = 50): Promise<Array<{ id: string; status: Topup['status'] }>> {
    const due = await db
      .selectFrom('topups')
      .select('id')
      .where('status', 'in', ['pending', 'submitted'])
      .where('next_attempt_at', '<=', sql<Date>`now()`)
      .orderBy('next_attempt_at')
      .limit(limit)
      .execute()
    const out: Array<{ id: string; status: Topup['status'] }> = []
    for (const { id } of due) {
      const t = await claim(id)
      if (!t) continue
      let status: Topup['status']
      try {
        status = await attempt(t)
      } catch (err) {
        // unknown errors (RPC down, ...) count too, so a broken top-up cannot retry forever
        const fresh = await db.selectFrom('topups').selectAll().where('id', '=', id).executeTakeFirstOrThrow()
        status = await recordFailure(fresh, err)
      }
      out.push({ id, status })
    }
    return out
  }

  return {
    check,
    processDue,
    /** One round of the worker job: open new needs, then pay what is due. */
    async runOnce(): Promise<{ created: number; processed: Array<{ id: string; status: Topup['status'] }> }> {
      const created = await check()
      return { created, processed: await processDue() }
    },
    /** Top-ups of one agent, newest need first. */
    listForAgent: (agentId: string, limit?: number) => listTopups(db, agentId, limit),
  }
}

export type Topups = ReturnType<typeof createTopups>

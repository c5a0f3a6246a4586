// Opening top-up needs: reads the USDC balance of every agent with top-ups enabled (one multicall
// per page, all at one block) and opens a need, with its `agent.balance_low` event, for each one
// below its threshold, never for more than the agent's spend caps still allow.
import { sql, type Kysely } from 'kysely'
import { getAddress } from 'viem'
import { MULTICALL3_ADDRESS } from '../../chain/multicall3-abi.js'
import { usdcAbi } from '../../chain/usdc-abi.js'
import type { Database } from '../../db/database.js'
import type { Topup } from '../../db/topups-tables.js'
import { spendWindowTotals, windowsAt, type SpendWindows } from '../agent-payments/spend-windows.js'
import { emitEvent } from '../events/outbox.js'
import type { TopupContext } from './context.js'

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

async function balancesAt(ctx: TopupContext, addresses: string[], blockNumber: bigint): Promise<bigint[]> {
  return ctx.chain.multicall({
    multicallAddress: MULTICALL3_ADDRESS,
    allowFailure: false,
    blockNumber,
    contracts: addresses.map((a) => ({
      address: ctx.usdc,
      abi: usdcAbi,
      functionName: 'balanceOf' as const,
      args: [getAddress(a)] as const,
    })),
  }) as Promise<bigint[]>
}

/** Opens a need for every enabled agent below its threshold; returns how many this call created. */
export async function checkTopups(ctx: TopupContext, pageSize = 500): Promise<number> {
  const block = await ctx.chain.getBlockNumber({ cacheTime: 0 })
  let created = 0
  let after = '00000000-0000-0000-0000-000000000000'
  for (;;) {
    const { rows } = await sql<Candidate>`
      select a.id, a.user_id, a.name, a.address, a.top_up_threshold as threshold, a.top_up_amount as amount, a.cap_daily, a.cap_monthly, a.updated_at as agent_updated_at,
             t.need_seq as last_seq, t.status as last_status, t.confirmed_block as last_confirmed_block, t.updated_at as last_updated_at
      from agents a
      left join lateral (select need_seq, status, confirmed_block, updated_at from topups where agent_id = a.id order by need_seq desc limit 1) t on true
      where a.top_up_enabled and a.top_up_amount > 0 and a.id > ${after}
      order by a.id limit ${pageSize}`.execute(ctx.db)
    if (rows.length === 0) break
    after = rows[rows.length - 1]!.id
    const eligible = rows.filter((c) => c.last_status !== 'pending' && c.last_status !== 'submitted')
    const balances = eligible.length
      ? await balancesAt(
          ctx,
          eligible.map((c) => c.address),
          block,
        )
      : []
    for (const [i, c] of eligible.entries()) {
      const balance = balances[i]!
      if (isNewNeed(c, balance, block) && (await openNeed(ctx, c, balance, block))) created++
    }
    if (rows.length < pageSize) break
  }
  return created
}

/** Opens the need of `c`, below its threshold at `block`, for what its caps allow; whether this call opened it. */
async function openNeed(ctx: TopupContext, c: Candidate, balance: bigint, block: bigint): Promise<boolean> {
  // never put in more than the caps still let the agent spend (issue 33): the wallet then holds
  // at most that headroom, so top-ups cannot fund spending past the caps
  const headroom = await capHeadroom(ctx.db, ctx.windows, c)
  const amount = headroom === null || headroom - balance >= BigInt(c.amount) ? BigInt(c.amount) : headroom - balance
  if (amount <= 0n) {
    ctx.log.info(
      {
        agent: c.address,
        balance: balance.toString(),
        threshold: c.threshold,
        headroom: headroom!.toString(),
        reason: 'spend_caps',
      },
      'top-up not opened: the balance already covers what the spend caps still allow',
    )
    return false
  }
  const r = await insertNeed(ctx.db, c, amount, balance, block)
  if (!r) return false
  ctx.log.info(
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
  return true
}

/** The need's row and its alert, in one transaction; undefined when another check opened it first. */
function insertNeed(db: Kysely<Database>, c: Candidate, amount: bigint, balance: bigint, block: bigint) {
  // the unique (agent_id, need_seq) and one-open-per-agent indexes decide any race
  return db.transaction().execute(async (trx) => {
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
}

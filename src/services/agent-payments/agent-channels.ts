/**
 * The `batch-settlement` half of agent payments (issue #34 item 8): the channel an agent wallet
 * pays a receiver through on this platform's proxy, and the cumulative voucher it signs next.
 *
 * - The channel's config is the platform's own (the agent wallet as payer and payerAuthorizer, the
 *   registry's payee, the platform's receiverAuthorizer and withdrawal delay, this deployment's
 *   USDC), kept in `agent_channels`; never taken from the caller's challenge.
 * - What the server charged and holds is read from the proxy's own channel row (`batch_channels`,
 *   same database, committed before each answer), so the next voucher is `charged + price`, which
 *   the proxy accepts without a corrective round trip.
 * - A deposit is signed when the channel cannot cover the voucher: at most the owner's
 *   `spend_caps.channel_deposit` (default 100 x the price); the caller may ask for less, never more.
 * - The caps count each voucher's increment; a signed voucher stays counted until a later voucher
 *   of the platform's covers it without it having been charged (`releaseCovered`).
 */
import { sql, type Kysely } from 'kysely'
import { getAddress, type Hex } from 'viem'
import type { Database } from '../../db/database.js'
import { appError } from '../../errors.js'
import { formatUsdc } from '../../x402/usdc-amount.js'
import { moveAgentPayment } from './move-payment.js'
import type { SpendWindows } from './spend-windows.js'

export interface ChannelConfigArgs {
  payer: Hex
  payerAuthorizer: Hex
  receiver: Hex
  receiverAuthorizer: Hex
  token: Hex
  withdrawDelay: number
  salt: Hex
}

export interface ChannelPlan {
  config: ChannelConfigArgs
  /** a channel the platform has not signed for before (its row is written with the payment) */
  fresh: boolean
  /** what the proxy charged on the channel so far (its cumulative base) */
  charged: bigint
  /** what the channel holds on the proxy's record (0 before its first deposit arrived) */
  balance: bigint
}

export interface ChannelView {
  object: 'agent_channel'
  channel_id: string
  network: string
  receiver: string
  receiver_authorizer: string
  token: string
  withdraw_delay: number
  /** what the platform signed deposits for from the agent wallet */
  deposited: string
  /** what the channel holds (the proxy's record of the chain) */
  balance: string
  /** what the seller charged so far (cumulative) */
  charged: string
  /** what the seller claimed on chain so far */
  claimed: string
  /** the highest cumulative voucher signed */
  signed_max_claimable: string
  /** balance − charged: what a refund or a withdrawal would return to the agent wallet now */
  refundable: string
  /** when a timed withdrawal was started (ISO), or null */
  withdraw_requested_at: string | null
  /** the platform's timed withdrawal of the channel (POST …/channels/:id/withdraw), or null */
  withdrawal: {
    status: string
    amount: string
    withdrawn: string | null
    finalize_after: string | null
  } | null
  created_at: string
}

/** The terms of a channel this platform pays through: its network, payee and authorizer, token and withdrawal delay. */
export interface ChannelTerms {
  network: string
  receiver: string
  receiverAuthorizer: string
  token: string
  withdrawDelay: number
}

export function createAgentChannels(deps: { db: Kysely<Database> }) {
  const { db } = deps
  return {
    plan: (agent: { id: string; address: string }, t: ChannelTerms, newSalt: () => Hex) =>
      planChannel(db, agent, t, newSalt),
    record: (agentId: string, channelId: string, network: string, c: ChannelConfigArgs, o: ChannelSigned) =>
      recordChannel(db, agentId, channelId, network, c, o),
    releaseCovered: (windows: SpendWindows, v: Covered) => releaseCovered(db, windows, v),
    list: (agentId: string) => listChannels(db, agentId),
  }
}

/**
 * The channel `agent` pays `receiver` through under these terms: the latest one the platform
 * opened and no withdrawal started on (agent-channel-withdrawals.ts), else a new config (random salt).
 */
async function planChannel(
  db: Kysely<Database>,
  agent: { id: string; address: string },
  t: ChannelTerms,
  newSalt: () => Hex,
): Promise<ChannelPlan & { channelId?: string }> {
  const row = await db
    .selectFrom('agent_channels as a')
    .leftJoin('batch_channels as b', 'b.channel_id', 'a.channel_id')
    .leftJoin('agent_channel_withdrawals as w', 'w.channel_id', 'a.channel_id')
    .select(['a.channel_id', 'a.salt', 'b.charged', 'b.balance', 'b.withdraw_requested_at', 'w.status as withdrawal'])
    .where('a.agent_id', '=', agent.id)
    .where('a.network', '=', t.network)
    .where('a.receiver', '=', t.receiver.toLowerCase())
    .where('a.receiver_authorizer', '=', t.receiverAuthorizer.toLowerCase())
    .where('a.token', '=', t.token.toLowerCase())
    .where('a.withdraw_delay', '=', t.withdrawDelay)
    .orderBy('a.created_at', 'desc')
    .limit(1)
    .executeTakeFirst()
  // a timed withdrawal started on it (the proxy's view of the chain, or the platform's own record): never again
  const usable = row && !row.withdraw_requested_at && !row.withdrawal
  const config: ChannelConfigArgs = {
    payer: getAddress(agent.address),
    payerAuthorizer: getAddress(agent.address),
    receiver: getAddress(t.receiver),
    receiverAuthorizer: getAddress(t.receiverAuthorizer),
    token: getAddress(t.token),
    withdrawDelay: t.withdrawDelay,
    salt: usable ? (row.salt as Hex) : newSalt(),
  }
  return {
    config,
    fresh: !usable,
    charged: usable && row.charged !== null ? BigInt(row.charged) : 0n,
    balance: usable && row.balance !== null ? BigInt(row.balance) : 0n,
    ...(usable ? { channelId: row.channel_id } : {}),
  }
}

/** What one voucher signed on a channel: the deposit it carries (0n: none) and its cumulative amount. */
export interface ChannelSigned {
  deposit: bigint
  maxClaimable: bigint
}

/** Records the channel (first voucher) and what this voucher signed and deposited. */
async function recordChannel(
  db: Kysely<Database>,
  agentId: string,
  channelId: string,
  network: string,
  c: ChannelConfigArgs,
  o: ChannelSigned,
): Promise<void> {
  await db
    .insertInto('agent_channels')
    .values({
      channel_id: channelId.toLowerCase(),
      agent_id: agentId,
      network,
      payer: c.payer.toLowerCase(),
      receiver: c.receiver.toLowerCase(),
      receiver_authorizer: c.receiverAuthorizer.toLowerCase(),
      token: c.token.toLowerCase(),
      withdraw_delay: c.withdrawDelay,
      salt: c.salt.toLowerCase(),
      deposited: o.deposit.toString(),
      signed_max_claimable: o.maxClaimable.toString(),
    })
    .onConflict((oc) =>
      oc.column('channel_id').doUpdateSet({
        deposited: sql`agent_channels.deposited + ${o.deposit.toString()}::numeric`,
        signed_max_claimable: sql`greatest(agent_channels.signed_max_claimable, ${o.maxClaimable.toString()}::numeric)`,
        updated_at: sql`now()`,
      }),
    )
    .execute()
}

/**
 * What to deposit into a channel that holds `balance` for a voucher of `needed` (cumulative):
 * the caller's `deposit_amount` or else the owner's bound (`spend_caps.channel_deposit`, default 100
 * x the price); refused (403 `spend_cap_exceeded`, cap `channel_deposit`) when the caller asks for
 * more than the bound or the bound cannot cover the voucher.
 */
export function channelDeposit(
  agent: { cap_channel_deposit?: string | null },
  price: bigint,
  asked: bigint | undefined,
  short: bigint,
): bigint {
  const bound = agent.cap_channel_deposit == null ? 100n * price : BigInt(agent.cap_channel_deposit)
  const refuse = (amount: bigint, detail: string) =>
    appError(
      'spend_cap_exceeded',
      { cap: 'channel_deposit', detail },
      {
        details: {
          cap: 'channel_deposit',
          limit: bound.toString(),
          amount: amount.toString(),
          remaining: bound.toString(),
        },
      },
    )
  if (asked !== undefined && asked > bound)
    throw refuse(
      asked,
      `a deposit of ${formatUsdc(asked)} USDC is above the agent's channel deposit bound of ${formatUsdc(bound)} USDC`,
    )
  const amount = asked ?? bound
  if (amount < short)
    throw refuse(
      short,
      `the channel needs a deposit of at least ${formatUsdc(short)} USDC, above ${asked !== undefined ? 'the deposit_amount asked' : `the agent's channel deposit bound of ${formatUsdc(bound)} USDC`}`,
    )
  return amount
}

export interface Covered {
  rowId: string
  payer: string
  payTo: string
  channelId: string
  charged: bigint
  aggregate: bigint
}

/**
 * After voucher `rowId` (cumulative `aggregate`, built on the proxy's charge `charged`) was
 * signed: the agent's earlier vouchers on the channel above `charged` (never charged in full)
 * and at most `aggregate` (so whatever of them the receiver could claim, the new one covers)
 * stop counting beyond the part the proxy did charge. A voucher fully uncharged becomes
 * `expired` (superseded); a partly charged one keeps that part, `accepted`. Under the pair's lock.
 */
async function releaseCovered(db: Kysely<Database>, windows: SpendWindows, v: Covered): Promise<void> {
  const rows = await db
    .selectFrom('agent_payments')
    .select(['id', 'agent_id', 'amount', 'value_aggregate', 'day_window', 'month_window'])
    .where('payer', '=', v.payer)
    .where('pay_to', '=', v.payTo)
    .where('scheme', '=', 'batch-settlement')
    .where('status', '=', 'reserved')
    .where('voucher_id', '=', v.channelId)
    .where('id', '!=', v.rowId)
    .where('value_aggregate', '>', v.charged.toString())
    .where('value_aggregate', '<=', v.aggregate.toString())
    .execute()
  for (const r of rows) {
    const amount = BigInt(r.amount)
    const base = BigInt(r.value_aggregate!) - amount
    const kept = v.charged > base ? v.charged - base : 0n
    const u = await moveAgentPayment(
      db,
      r.id,
      'reserved',
      { status: kept === 0n ? 'expired' : 'accepted', amount: (kept === 0n ? amount : kept).toString() },
      { type: 'superseded', data: { by: v.rowId, charged: kept.toString() } },
    )
    if (!u) continue
    await windows.adjust(r.agent_id, v.payer, { day: r.day_window, month: r.month_window }, kept - amount)
  }
}

/** The agent's channels with the proxy's record of each: newest first. */
async function listChannels(db: Kysely<Database>, agentId: string): Promise<ChannelView[]> {
  const rows = await db
    .selectFrom('agent_channels as a')
    .leftJoin('batch_channels as b', 'b.channel_id', 'a.channel_id')
    .leftJoin('agent_channel_withdrawals as w', 'w.channel_id', 'a.channel_id')
    .select([
      'a.channel_id',
      'a.network',
      'a.receiver',
      'a.receiver_authorizer',
      'a.token',
      'a.withdraw_delay',
      'a.deposited',
      'a.signed_max_claimable',
      'a.created_at',
      'b.balance',
      'b.charged',
      'b.total_claimed',
      'b.withdraw_requested_at',
      'w.status as withdrawal_status',
      'w.amount as withdrawal_amount',
      'w.withdrawn',
      'w.finalize_after',
    ])
    .where('a.agent_id', '=', agentId)
    .orderBy('a.created_at', 'desc')
    .limit(200)
    .execute()
  return rows.map((r) => {
    const balance = BigInt(r.balance ?? 0)
    const charged = BigInt(r.charged ?? 0)
    return {
      object: 'agent_channel' as const,
      channel_id: r.channel_id,
      network: r.network,
      receiver: r.receiver,
      receiver_authorizer: r.receiver_authorizer,
      token: r.token,
      withdraw_delay: r.withdraw_delay,
      deposited: r.deposited,
      balance: balance.toString(),
      charged: charged.toString(),
      claimed: String(r.total_claimed ?? 0),
      signed_max_claimable: r.signed_max_claimable,
      refundable: (balance > charged ? balance - charged : 0n).toString(),
      withdraw_requested_at: r.withdraw_requested_at ? new Date(r.withdraw_requested_at).toISOString() : null,
      withdrawal: r.withdrawal_status
        ? {
            status: r.withdrawal_status,
            amount: String(r.withdrawal_amount),
            withdrawn: r.withdrawn === null ? null : String(r.withdrawn),
            finalize_after: r.finalize_after ? new Date(r.finalize_after).toISOString() : null,
          }
        : null,
      created_at: r.created_at.toISOString(),
    }
  })
}

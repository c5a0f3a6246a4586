/**
 * The timed withdrawal of an agent wallet's `batch-settlement` channel (issue #34 item 8): the
 * buyer's escape hatch of the x402 batch-settlement spec, for when the cooperative refund
 * (agent-channel-refunds.ts) is not to be had. The contract takes it only from the payer, so the
 * platform signs it with the agent's custodial key and the agent wallet pays its gas.
 *
 * One call, asked again until done:
 * 1. no withdrawal yet: `initiateWithdraw(config, balance − totalClaimed)` (the chain's `channels(id)`);
 * 2. initiated and the channel's `withdrawDelay` not over (by the chain's clock): answers when it is due;
 * 3. due: `finalizeWithdraw(config)`; the contract returns what is still unclaimed to the wallet (the
 *    proxy's worker claims the calls it served as soon as it sees the withdrawal start).
 *
 * The config is the platform's record of the channel (`agent_channels`), never the caller's. Each
 * transaction is recorded (`agent_channel_withdrawals`: signed transaction, hash, nonce) before it
 * is broadcast, under the wallet's lock and the (wallet, receiver) voucher lock, so a repeat while
 * one is in flight rebroadcasts it and a concurrent payment never plans on the channel after it
 * (agent-channels.ts `plan` skips a channel with a withdrawal). Once finalized, the vouchers above
 * what the receiver claimed stop counting against the caps, as nothing can claim them any more.
 */
import type { FastifyBaseLogger } from 'fastify'
import type { Kysely, Selectable } from 'kysely'
import { encodeFunctionData, parseEventLogs, type Hex, type PublicClient, type TransactionReceipt } from 'viem'
import { computeChannelId } from '@x402/evm/batch-settlement/client'
import { batchSettlementAbi } from '../../chain/batch-settlement/abi.js'
import { BATCH_SETTLEMENT_ADDRESS } from '../../chain/batch-settlement/addresses.js'
import { normalizeConfig, readChannel, type ChannelConfig } from '../../chain/batch-settlement/channel.js'
import { broadcast } from '../../chain/relayer.js'
import type { Config } from '../../config.js'
import type { AgentChannelWithdrawalsTable } from '../../db/agent-payments-tables.js'
import type { Database } from '../../db/database.js'
import { appError } from '../../errors.js'
import type { RedisClient } from '../../redis-client.js'
import { U128_MAX } from '../../schemes/batch-settlement/constants.js'
import { formatUsdc } from '../../x402/usdc-amount.js'
import type { AgentRow } from '../accounts/agent-auth.js'
import { mirrorChain } from '../batch-claim/channel-rows.js'
import { createAgentChannels, type ChannelView } from './agent-channels.js'
import { CustodialKeys } from './custodial-keys.js'
import { createSpendWindows, type SpendWindows } from './spend-windows.js'
import { createVoucherLock } from './voucher-lock.js'
import { signWalletTx, type WalletTxContext } from './agent-wallet-tx.js'

export interface AgentChannelWithdrawalDeps {
  db: Kysely<Database>
  redis: RedisClient
  key(...parts: string[]): string
  chain: PublicClient
  config: Readonly<Config>
}

type Row = Selectable<AgentChannelWithdrawalsTable>

/** The answer of POST …/channels/:id/withdraw. */
export interface ChannelWithdrawalView {
  object: 'agent_channel_withdrawal'
  channel_id: string
  /** what this call sent: initiateWithdraw, finalizeWithdraw, or nothing (in flight, not due, done) */
  action: 'initiated' | 'finalized' | 'none'
  /** initiating / finalizing: that transaction is sent and not mined yet; waiting: the delay runs */
  status: Row['status']
  /** what initiateWithdraw asked for (atomic USDC) */
  amount: string
  /** what finalizeWithdraw returned to the agent wallet, once withdrawn */
  withdrawn: string | null
  requested_at: string
  initiated_at: string | null
  /** when finalizeWithdraw can be sent (the chain's clock) */
  finalize_after: string | null
  /** waiting: whether the delay is over now */
  due: boolean
  initiate_transaction: string | null
  finalize_transaction: string | null
  channel: ChannelView | null
}

const CHANNEL_ID = /^0x[0-9a-f]{64}$/
/** the voucher lock's second key for the wallet's own transactions (one nonce at a time) */
const WALLET_TX = 'wallet-tx'
const RECEIPT_TIMEOUT_MS = 30_000

interface Ctx extends WalletTxContext {
  deps: AgentChannelWithdrawalDeps
  db: Kysely<Database>
}

interface Channel {
  id: string
  agent: AgentRow
  receiver: string
  config: ChannelConfig
}

export function createAgentChannelWithdrawals(deps: AgentChannelWithdrawalDeps) {
  const { db, config } = deps
  const ctx: Ctx = {
    deps,
    db,
    chain: deps.chain,
    chainId: config.chain.chainId,
    keys: new CustodialKeys(config.masterKey),
    feeCap: config.settlement.maxFeePerGasWei,
  }
  const lock = createVoucherLock(deps.redis, deps.key)
  const windows = createSpendWindows(deps.redis, deps.key)
  const channels = createAgentChannels({ db })

  return {
    /**
     * The next step of `agent`'s timed withdrawal of channel `channelId` (see the module comment);
     * the withdrawal as it stands after it.
     */
    async withdraw(agent: AgentRow, channelId: string, log: FastifyBaseLogger): Promise<ChannelWithdrawalView> {
      if (!config.batchSettlement.enabled)
        throw appError('service_unavailable', { detail: 'batch-settlement is not enabled on this deployment' })
      const ch = await channelOf(ctx, agent, channelId)
      let w = await rowOf(db, ch.id)
      let action: ChannelWithdrawalView['action'] = 'none'
      let released = false
      if (!w || w.status === 'waiting') {
        const next = await lock.hold(agent.address, WALLET_TX, () =>
          lock.hold(agent.address, ch.receiver, () => sendNext(ctx, ch)),
        )
        ;({ w, action } = next)
        released = next.released ?? false
      }
      const decided = await decide(ctx, ch, w, action !== 'none')
      if (released || decided.released) await releaseCaps(ctx, windows, channels, ch, decided.w)
      if (action !== 'none') log.info({ channel: ch.id, action, tx: txOf(decided.w) }, 'agent channel withdrawal sent')
      const view = (await channels.list(agent.id)).find((v) => v.channel_id === ch.id) ?? null
      return viewOf(decided.w, action, await chainNow(ctx), view)
    },
  }
}

/** The agent's channel by id, its config from the platform's records (404 when it is not the agent's). */
async function channelOf(ctx: Ctx, agent: AgentRow, channelId: string): Promise<Channel> {
  const id = channelId.toLowerCase()
  const row = CHANNEL_ID.test(id)
    ? await ctx.db
        .selectFrom('agent_channels')
        .select(['payer', 'receiver', 'receiver_authorizer', 'token', 'withdraw_delay', 'salt'])
        .where('agent_id', '=', agent.id)
        .where('channel_id', '=', id)
        .executeTakeFirst()
    : undefined
  if (!row) throw appError('not_found', { what: 'channel' })
  const config = normalizeConfig({
    payer: row.payer as Hex,
    payerAuthorizer: row.payer as Hex,
    receiver: row.receiver as Hex,
    receiverAuthorizer: row.receiver_authorizer as Hex,
    token: row.token as Hex,
    withdrawDelay: row.withdraw_delay,
    salt: row.salt as Hex,
  })
  if (computeChannelId(config, ctx.deps.config.chain.caip2).toLowerCase() !== id)
    throw new Error(`agent channel ${id} does not hash to its id`)
  return { id, agent, receiver: row.receiver, config }
}

const rowOf = (db: Kysely<Database>, channelId: string) =>
  db.selectFrom('agent_channel_withdrawals').selectAll().where('channel_id', '=', channelId).executeTakeFirst()

/** The latest block's time (unix seconds): the contract's clock. */
async function chainNow(ctx: Ctx): Promise<number> {
  return Number((await ctx.chain.getBlock({ blockTag: 'latest' })).timestamp)
}

/**
 * Under the wallet's and the (wallet, receiver) locks: reads the withdrawal again and sends what is
 * next, recorded before its broadcast — initiateWithdraw when there is none, finalizeWithdraw once
 * a waiting one is due. Anything else (another caller sent it meanwhile, not due) is left as it is.
 */
async function sendNext(
  ctx: Ctx,
  ch: Channel,
): Promise<{ w: Row; action: ChannelWithdrawalView['action']; released?: boolean }> {
  const w = await rowOf(ctx.db, ch.id)
  if (!w) return { w: await initiate(ctx, ch), action: 'initiated' }
  if (w.status !== 'waiting' || (await chainNow(ctx)) < secondsOf(w.finalize_after!)) return { w, action: 'none' }
  const state = await readChannel(ctx.chain, ch.id as Hex, BATCH_SETTLEMENT_ADDRESS)
  if (state.withdrawRequestedAt === 0) {
    // a cooperative refund took the whole pending amount meanwhile: nothing is left to finalize
    const done = await ctx.db
      .updateTable('agent_channel_withdrawals')
      .set({ status: 'withdrawn', withdrawn: '0', updated_at: new Date() })
      .where('id', '=', w.id)
      .where('status', '=', 'waiting')
      .returningAll()
      .executeTakeFirst()
    await mirrorChain(ctx.db, ch.id as Hex, state)
    return { w: done ?? (await rowOf(ctx.db, ch.id))!, action: 'none', released: done !== undefined }
  }
  const tx = await signWalletTx(ctx, ch.agent, {
    to: BATCH_SETTLEMENT_ADDRESS,
    data: encodeFunctionData({ abi: batchSettlementAbi, functionName: 'finalizeWithdraw', args: [ch.config] }),
    name: 'finalizeWithdraw',
    channelId: ch.id,
    estimate: () => estimate(ctx, ch, 'finalizeWithdraw', [ch.config]),
  })
  const recorded = await ctx.db
    .updateTable('agent_channel_withdrawals')
    .set({
      status: 'finalizing',
      finalize_tx: tx.hash,
      finalize_raw_tx: tx.raw,
      finalize_nonce: tx.nonce,
      updated_at: new Date(),
    })
    .where('id', '=', w.id)
    .where('status', '=', 'waiting')
    .returningAll()
    .executeTakeFirstOrThrow()
  await broadcast(ctx.chain, tx.raw)
  return { w: recorded, action: 'finalized' }
}

/** initiateWithdraw for everything the channel holds unclaimed, recorded, then broadcast. */
async function initiate(ctx: Ctx, ch: Channel): Promise<Row> {
  const state = await readChannel(ctx.chain, ch.id as Hex, BATCH_SETTLEMENT_ADDRESS)
  const amount = state.balance - state.totalClaimed
  if (amount <= 0n)
    throw appError(
      'channel_withdraw_refused',
      {
        detail: `nothing is left to withdraw: the channel holds ${formatUsdc(state.balance)} USDC, all of it claimed by the seller`,
      },
      { details: { channel_id: ch.id, reason: 'nothing_to_withdraw' } },
    )
  const args = [ch.config, amount] as const
  const tx = await signWalletTx(ctx, ch.agent, {
    to: BATCH_SETTLEMENT_ADDRESS,
    data: encodeFunctionData({ abi: batchSettlementAbi, functionName: 'initiateWithdraw', args }),
    name: 'initiateWithdraw',
    channelId: ch.id,
    estimate: () => estimate(ctx, ch, 'initiateWithdraw', args),
  })
  // recorded before broadcast: a repeat (or a crash) leaves this transaction to rebroadcast, never a second
  const w = await ctx.db
    .insertInto('agent_channel_withdrawals')
    .values({
      channel_id: ch.id,
      agent_id: ch.agent.id,
      status: 'initiating',
      amount: amount.toString(),
      initiate_tx: tx.hash,
      initiate_raw_tx: tx.raw,
      initiate_nonce: tx.nonce,
    })
    .returningAll()
    .executeTakeFirstOrThrow()
  await broadcast(ctx.chain, tx.raw)
  return w
}

/** The gas of the call from the agent wallet (its revert names the contract's error). */
function estimate(
  ctx: Ctx,
  ch: Channel,
  functionName: 'initiateWithdraw' | 'finalizeWithdraw',
  args: readonly [ChannelConfig, bigint] | readonly [ChannelConfig],
): Promise<bigint> {
  return ctx.chain.estimateContractGas({
    address: BATCH_SETTLEMENT_ADDRESS,
    abi: batchSettlementAbi,
    functionName,
    args,
    account: ch.config.payer,
  } as Parameters<PublicClient['estimateContractGas']>[0])
}

/**
 * A recorded transaction in flight (initiating, finalizing): its receipt, else rebroadcast (unless
 * `justSent`) and its receipt awaited (30 s); the receipt decides the row. `released`: this call finalized it (the caps
 * are to let go, once). Reverted: the row goes back (initiate: removed) and the call is refused.
 */
async function decide(ctx: Ctx, ch: Channel, w: Row, justSent: boolean): Promise<{ w: Row; released: boolean }> {
  const hash = txOf(w)
  if (!hash || (w.status !== 'initiating' && w.status !== 'finalizing')) return { w, released: false }
  const known = justSent ? null : await ctx.chain.getTransactionReceipt({ hash: hash as Hex }).catch(() => null)
  if (!justSent && !known)
    await broadcast(ctx.chain, (w.status === 'initiating' ? w.initiate_raw_tx : w.finalize_raw_tx) as Hex)
  const receipt =
    known ??
    (await ctx.chain.waitForTransactionReceipt({ hash: hash as Hex, timeout: RECEIPT_TIMEOUT_MS }).catch(() => null))
  if (!receipt) return { w, released: false }
  if (receipt.status !== 'success') {
    await revertRow(ctx, w)
    throw appError(
      'channel_withdraw_refused',
      {
        detail: `${w.status === 'initiating' ? 'initiateWithdraw' : 'finalizeWithdraw'} reverted in ${hash}; only its gas was spent: retry`,
      },
      { details: { channel_id: ch.id, reason: 'reverted', transaction: hash } },
    )
  }
  const decided = w.status === 'initiating' ? await initiated(ctx, w, receipt) : await finalized(ctx, w, receipt)
  await mirrorChain(ctx.db, ch.id as Hex, await readChannel(ctx.chain, ch.id as Hex, BATCH_SETTLEMENT_ADDRESS))
  return decided
    ? { w: decided, released: decided.status === 'withdrawn' }
    : { w: (await rowOf(ctx.db, ch.id))!, released: false }
}

/** initiateWithdraw mined: the amount and the time it can be finalized, from its event. */
async function initiated(ctx: Ctx, w: Row, receipt: TransactionReceipt): Promise<Row | undefined> {
  const [e] = parseEventLogs({ abi: batchSettlementAbi, eventName: 'WithdrawInitiated', logs: receipt.logs })
  const block = await ctx.chain.getBlock({ blockNumber: receipt.blockNumber })
  const finalizeAfter = e ? Number(e.args.finalizeAfter) : Number(block.timestamp)
  return ctx.db
    .updateTable('agent_channel_withdrawals')
    .set({
      status: 'waiting',
      ...(e ? { amount: e.args.amount.toString() } : {}),
      initiated_at: new Date(Number(block.timestamp) * 1000),
      finalize_after: new Date(finalizeAfter * 1000),
      updated_at: new Date(),
    })
    .where('id', '=', w.id)
    .where('status', '=', 'initiating')
    .returningAll()
    .executeTakeFirst()
}

/** finalizeWithdraw mined: what came back to the wallet, from its event. */
async function finalized(ctx: Ctx, w: Row, receipt: TransactionReceipt): Promise<Row | undefined> {
  const [e] = parseEventLogs({ abi: batchSettlementAbi, eventName: 'WithdrawFinalized', logs: receipt.logs })
  return ctx.db
    .updateTable('agent_channel_withdrawals')
    .set({ status: 'withdrawn', withdrawn: (e?.args.amount ?? 0n).toString(), updated_at: new Date() })
    .where('id', '=', w.id)
    .where('status', '=', 'finalizing')
    .returningAll()
    .executeTakeFirst()
}

/** A reverted transaction: initiate leaves no withdrawal (the row goes), finalize leaves it waiting. */
async function revertRow(ctx: Ctx, w: Row): Promise<void> {
  if (w.status === 'initiating') {
    await ctx.db
      .deleteFrom('agent_channel_withdrawals')
      .where('id', '=', w.id)
      .where('status', '=', 'initiating')
      .execute()
    return
  }
  await ctx.db
    .updateTable('agent_channel_withdrawals')
    .set({ status: 'waiting', finalize_tx: null, finalize_raw_tx: null, finalize_nonce: null, updated_at: new Date() })
    .where('id', '=', w.id)
    .where('status', '=', 'finalizing')
    .execute()
}

/**
 * Withdrawn: the channel holds no more than the receiver claimed, so the agent's vouchers on it
 * above that (signed, never claimed) stop counting against the caps.
 */
async function releaseCaps(
  ctx: Ctx,
  windows: SpendWindows,
  channels: ReturnType<typeof createAgentChannels>,
  ch: Channel,
  w: Row,
): Promise<void> {
  const state = await readChannel(ctx.chain, ch.id as Hex, BATCH_SETTLEMENT_ADDRESS)
  await channels.releaseCovered(windows, {
    rowId: w.id,
    payer: ch.config.payer.toLowerCase(),
    payTo: ch.receiver,
    channelId: ch.id,
    charged: state.totalClaimed,
    aggregate: U128_MAX,
  })
}

const txOf = (w: Row) => (w.status === 'finalizing' || w.status === 'withdrawn' ? w.finalize_tx : w.initiate_tx) ?? null
const secondsOf = (d: Date) => Math.floor(new Date(d).getTime() / 1000)
const iso = (d: Date | null) => (d ? new Date(d).toISOString() : null)

function viewOf(
  w: Row,
  action: ChannelWithdrawalView['action'],
  now: number,
  channel: ChannelView | null,
): ChannelWithdrawalView {
  return {
    object: 'agent_channel_withdrawal',
    channel_id: w.channel_id,
    action,
    status: w.status,
    amount: String(w.amount),
    withdrawn: w.withdrawn === null ? null : String(w.withdrawn),
    requested_at: iso(w.requested_at)!,
    initiated_at: iso(w.initiated_at),
    finalize_after: iso(w.finalize_after),
    due: w.status === 'waiting' && w.finalize_after !== null && now >= secondsOf(w.finalize_after),
    initiate_transaction: w.initiate_tx,
    finalize_transaction: w.finalize_tx,
    channel,
  }
}

/**
 * `reserve` of the `batch-settlement` scheme: the channel's Redis state is checked and locked in
 * one round trip (channel-state.ts: no timed withdrawal pending, the cumulative amount, rules 7, 9
 * and 10), loaded first from Postgres and the chain when absent; a deposit is submitted while the
 * channel is locked, before the call is served. The reservation moves the channel only once the
 * call was served and its row committed (`served`), and unlocks it otherwise (`release`).
 */
import { randomUUID } from 'node:crypto'
import type { FastifyBaseLogger } from 'fastify'
import type { Hex } from 'viem'
import { appError } from '../../errors.js'
import { CallRefusal } from '../../seam/types.js'
import { refuse, type ReasonCode } from '../../x402/reasons.js'
import type { Reservation, VerifyContext } from '../scheme.js'
import { readChannel } from '../../chain/batch-settlement/channel.js'
import type { ChannelSnapshot, ReserveOutcome } from './channel-state.js'
import { BATCH_SETTLEMENT_ADDRESS } from './constants.js'
import type { BatchContext, BatchPayment } from './context.js'
import type { BatchPayload } from './payload.js'
import { fail } from './verify.js'

/** how long a call waits for its channel's lock before `channel_busy` */
const BUSY_WAIT_MS = 1_500
const BUSY_POLL_MS = 15
/** the lock outlives the call by this much (and a deposit's transaction by DEPOSIT_MS) */
const LOCK_MARGIN_MS = 10_000
const DEPOSIT_MS = 45_000

const retryShortly = (detail: string) =>
  CallRefusal.error(appError('service_unavailable', { detail }, { headers: { 'retry-after': '1' } }))

/** The spec's channel snapshot (`extra.channelState`), amounts as decimal strings. */
export function channelStateJson(channelId: string, s: ChannelSnapshot): Record<string, unknown> {
  return {
    channelId,
    balance: s.balance.toString(),
    totalClaimed: s.totalClaimed.toString(),
    withdrawRequestedAt: s.withdrawRequestedAt,
    refundNonce: s.refundNonce.toString(),
    chargedCumulativeAmount: s.charged.toString(),
  }
}

/** The corrective 402 of a stale cumulative amount: the channel, and the last voucher kept. */
export function corrective(channelId: string, s: ChannelSnapshot, reason: ReasonCode, detail: string): CallRefusal {
  const extra: Record<string, unknown> = { channelState: channelStateJson(channelId, s) }
  if (s.signature !== '') extra.voucherState = { signedMaxClaimable: s.signedMax.toString(), signature: s.signature }
  return CallRefusal.corrective(refuse(reason, detail), 'batch-settlement', extra)
}

type LoadContext = Pick<BatchContext, 'store' | 'state' | 'chain' | 'config'>

/** Loads the channel into Redis from Postgres (or the chain); false: no channel anywhere. */
export async function load(
  x: LoadContext,
  b: Pick<BatchPayload, 'channelId' | 'type' | 'config'>,
  log: FastifyBaseLogger,
): Promise<boolean | CallRefusal> {
  let s = await x.store.read(b.channelId)
  if (!s) {
    let onChain
    try {
      onChain = await readChannel(x.chain, b.channelId)
    } catch (err) {
      log.warn({ err: (err as Error).message }, 'batch channel read failed')
      return fail('invalid_batch_settlement_evm_channel_state_read_failed')
    }
    // the spec's baseline when the server has no record of a channel: charged = totalClaimed
    const base = { charged: onChain.totalClaimed, signedMax: onChain.totalClaimed, signature: '' }
    s = { ...base, ...onChain }
    if (onChain.balance > 0n) await x.store.open(openArgs(x, b), onChain)
    else if (b.type !== 'deposit') return false
  }
  await x.state.load(b.channelId, s)
  return true
}

const openArgs = (x: LoadContext, b: Pick<BatchPayload, 'channelId' | 'config'>) => ({
  channelId: b.channelId,
  network: x.config.chain.caip2,
  contract: BATCH_SETTLEMENT_ADDRESS,
  config: b.config,
})

/** Locks the channel for this call, waiting briefly while another call holds it. */
async function lockChannel(
  x: BatchContext,
  p: BatchPayment,
  token: string,
  ctx: VerifyContext,
): Promise<ReserveOutcome | CallRefusal> {
  const b = p.batch
  const args = {
    channelId: b.channelId,
    type: b.type,
    maxClaimable: b.maxClaimable,
    amount: p.value,
    deposit: b.deposit?.amount ?? 0n,
    token,
    lockMs: ctx.callMs + LOCK_MARGIN_MS + (b.deposit ? DEPOSIT_MS : 0),
  }
  const until = Date.now() + BUSY_WAIT_MS
  for (let loaded = false; ;) {
    const r = await x.state.reserve({ ...args, nowMs: Date.now() })
    if (r.code === 'not_loaded' && !loaded) {
      loaded = true
      const ok = await load(x, b, ctx.log)
      if (ok instanceof CallRefusal) return ok
      if (!ok) return fail('invalid_batch_settlement_evm_channel_not_found', 'send a deposit payload first')
      continue
    }
    if (r.code !== 'busy' || Date.now() >= until) return r
    await new Promise((resolve) => setTimeout(resolve, BUSY_POLL_MS))
  }
}

export async function reserveBatch(
  x: BatchContext,
  p: BatchPayment,
  ctx: VerifyContext,
): Promise<Reservation | CallRefusal> {
  const b = p.batch
  // a refund is a payment operation, carried out by `operate` (refund.ts), never reserved for a call
  if (b.type === 'refund') return fail('invalid_batch_settlement_evm_refund_payload', 'a refund pays for no call')
  const token = randomUUID()
  let r
  try {
    r = await lockChannel(x, p, token, ctx)
  } catch (err) {
    ctx.log.error({ err: (err as Error).message }, 'batch channel state unavailable')
    return retryShortly('the channel state could not be read now; retry shortly')
  }
  if (r instanceof CallRefusal) return r
  switch (r.code) {
    case 'reserved':
      return deposited(x, p, token, r.state, ctx.log)
    case 'busy':
      return fail('invalid_batch_settlement_evm_channel_busy')
    case 'not_loaded':
      return retryShortly('the channel state could not be loaded now; retry shortly')
    case 'mismatch': {
      const want = r.state.charged + p.value
      const detail = `expected ${want} (charged ${r.state.charged} + ${p.value}), got ${b.maxClaimable}`
      return corrective(b.channelId, r.state, 'invalid_batch_settlement_evm_cumulative_amount_mismatch', detail)
    }
    case 'below_claimed':
      return corrective(b.channelId, r.state, 'invalid_batch_settlement_evm_cumulative_below_claimed', '')
    case 'not_found':
      return fail('invalid_batch_settlement_evm_channel_not_found', 'send a deposit payload first')
    case 'exceeds_balance':
      return fail('invalid_batch_settlement_evm_cumulative_exceeds_balance', `balance ${r.state.balance}`)
    case 'withdrawing':
      return withdrawing(r.state)
  }
}

/**
 * A voucher or deposit on a channel whose timed withdrawal is pending is refused. The spec lets a
 * server claim during the withdrawal delay and leaves the risk of what is unclaimed at
 * `finalizeWithdraw` to the server; it does not say whether to keep serving. Serving on would make
 * every call a race with the payer's `finalizeWithdraw` (a call served after the worker's last run
 * before the delay ends is taken back with the escrow), so the channel takes no more calls once the
 * proxy knows of the withdrawal (the claim worker writes it into the Redis copy in the run that
 * mirrors it, and claims that channel's served calls in the same run). A refund still goes through:
 * it claims what was charged and shrinks or cancels the withdrawal on chain.
 */
function withdrawing(s: ChannelSnapshot): CallRefusal {
  const since = new Date(s.withdrawRequestedAt * 1000).toISOString()
  return fail(
    'invalid_batch_settlement_evm_withdrawal_pending',
    `a timed withdrawal of this channel started at ${since}: pay from a new channel (another salt, with a deposit), or finalize the withdrawal and deposit again`,
  )
}

/** The deposit (when the payload carries one) submitted under the lock, then the reservation. */
async function deposited(
  x: BatchContext,
  p: BatchPayment,
  token: string,
  s: ChannelSnapshot,
  log: FastifyBaseLogger,
): Promise<Reservation | CallRefusal> {
  const b = p.batch
  if (!b.deposit) return reservation(x, p, token, s, log, undefined)
  let r
  try {
    r = await x.deposits.execute(b.config, b.channelId, b.deposit)
    if (!('reason' in r)) await x.store.open(openArgs(x, b), r.channel)
  } catch (err) {
    log.error({ err: (err as Error).message }, 'batch deposit failed')
    r = { reason: 'invalid_batch_settlement_evm_deposit_transaction_failed' as const, detail: 'retry shortly' }
  }
  if ('reason' in r) {
    await x.state.release(b.channelId, token).catch(() => {})
    return fail(r.reason, r.detail)
  }
  const c = r.channel
  const after = { ...s, balance: c.balance, totalClaimed: c.totalClaimed, withdrawRequestedAt: c.withdrawRequestedAt }
  return reservation(x, p, token, after, log, { txHash: r.txHash, amount: b.deposit.amount })
}

function reservation(
  x: BatchContext,
  p: BatchPayment,
  token: string,
  s: ChannelSnapshot,
  log: FastifyBaseLogger,
  deposit: { txHash: Hex; amount: bigint } | undefined,
): Reservation {
  const b = p.batch
  const balance = deposit ? s.balance : undefined
  const voucher = { signedMax: b.maxClaimable, signature: b.signature }
  let done = false
  return {
    settleFirst: false,
    recorded: () => {},
    rowFields: {
      channel: {
        channel_id: b.channelId,
        expected: s.charged.toString(),
        signed_max: b.maxClaimable.toString(),
        signature: b.signature,
      },
    },
    async release() {
      if (done) return
      done = true
      await x.state.release(b.channelId, token, balance).catch(() => {})
    },
    async served(charged: bigint, moved: boolean) {
      done = true
      const next = s.charged + charged
      if (!moved && !(await x.store.charge(b.channelId, s.charged, charged, voucher).catch(() => false)))
        log.error({ channelId: b.channelId }, 'batch channel moved under a served record-first call')
      const kept = await x.state.commit(b.channelId, token, { charged: next, ...voucher, balance }).catch(() => false)
      if (!kept) await x.state.forget(b.channelId).catch(() => {})
      return {
        transaction: deposit?.txHash ?? '',
        amount: deposit ? deposit.amount.toString() : '',
        extra: {
          chargedAmount: charged.toString(),
          channelState: channelStateJson(b.channelId, { ...s, charged: next, ...voucher }),
        },
      }
    },
  }
}

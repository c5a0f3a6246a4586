/**
 * The cooperative refund of a `batch-settlement` channel (the spec's "Cooperative refund flow"),
 * the platform being the channel's receiverAuthorizer:
 *
 * 1. the channel is locked as a call's would be, the refund's zero-charge voucher checked against
 *    it (`maxClaimableAmount` = what was charged; a stale one gets the corrective 402);
 * 2. the chain is read: what is left once the charged amount is claimed (`balance` −
 *    max(totalClaimed, charged)) is what a full refund returns; a partial `amount` may not exceed it;
 * 3. one transaction: `claimWithSignature` of the charged amount (with the refund voucher; left out
 *    when it is claimed already) then `refundWithSignature` at the chain's `refundNonce`, both signed
 *    by the platform's receiverAuthorizer key, in the contract's `multicall`;
 * 4. it is signed, recorded in `batch_transactions` (kind `refund`) with its hash and relayer nonce,
 *    then broadcast, and decided from its receipt: the amount is the `Refunded` event's, the channel's
 *    mirrored fields are read back from the chain into Postgres and Redis, and the lock released.
 *
 * A refund whose receipt does not come in time is left `sent`: the claim worker decides it
 * (src/services/batch-claim/transactions.ts) and the channel's lock lapses by itself.
 */
import { randomUUID } from 'node:crypto'
import type { FastifyBaseLogger } from 'fastify'
import { getAddress, parseEventLogs, type Hex, type PublicClient, type TransactionReceipt } from 'viem'
import { batchSettlementAbi } from '../../chain/batch-settlement/abi.js'
import { signClaimBatch, signRefund, type AuthorizerSigner } from '../../chain/batch-settlement/authorizer.js'
import {
  encodeClaimWithSignature,
  encodeMulticall,
  encodeRefundWithSignature,
} from '../../chain/batch-settlement/calldata.js'
import { readChannel, type OnchainChannel } from '../../chain/batch-settlement/channel.js'
import { broadcast, createRelayerLock, relayersFromKeys, signRelayerTx } from '../../chain/relayer.js'
import type { ReasonCode } from '../../x402/reasons.js'
import type { SchemeDeps as Deps } from '../scheme-deps.js'
import type { ChannelSnapshot, ChannelState, ReserveOutcome } from './channel-state.js'
import type { ChannelStore } from './channel-store.js'
import { BATCH_SETTLEMENT_ADDRESS } from './constants.js'
import type { ChannelConfig } from './typed-data.js'

/** how long a refund holds its channel (the transaction and its receipt) */
const REFUND_LOCK_MS = 60_000
const RECEIPT_TIMEOUT_MS = 30_000
const BUSY_WAIT_MS = 1_500
const BUSY_POLL_MS = 15

export interface RefundRequest {
  config: ChannelConfig
  channelId: Hex
  /** the zero-charge voucher: its ceiling must be what was charged */
  maxClaimable: bigint
  signature: Hex
  /** a partial refund; undefined: everything not charged */
  amount?: bigint
}

interface RefundDone {
  ok: true
  /** the `batch_transactions` row */
  id: string
  txHash: Hex
  /** what the `Refunded` event returned to the payer */
  refunded: bigint
  /** what the server charged on the channel (claimed now) */
  charged: bigint
  /** the channel on chain after the refund */
  after: OnchainChannel
}

interface RefundRefused {
  ok: false
  reason: ReasonCode
  detail: string
  /** the channel as the server keeps it: for the corrective 402 of a stale voucher */
  state?: ChannelSnapshot
  /** nothing was decided: the same refund may be sent again shortly (a 503) */
  retry?: boolean
}

export type RefundOutcome = RefundDone | RefundRefused

const refused = (reason: ReasonCode, detail: string, more: Partial<RefundRefused> = {}): RefundRefused => ({
  ok: false,
  reason,
  detail,
  ...more,
})

export interface RefundDeps {
  config: Deps['config']
  chain: PublicClient
  state: ChannelState
  store: ChannelStore
  /** loads a channel's Redis copy from Postgres or the chain; false: no channel anywhere */
  load(channelId: Hex, config: ChannelConfig, log: FastifyBaseLogger): Promise<boolean | RefundRefused>
}

type Ctx = {
  deps: Pick<Deps, 'redis' | 'key'> & RefundDeps
  signer: AuthorizerSigner
  relayers: ReturnType<typeof relayersFromKeys>
  lock: ReturnType<typeof createRelayerLock>
}

const contract = getAddress(BATCH_SETTLEMENT_ADDRESS)

export function createRefundExecutor(deps: Pick<Deps, 'redis' | 'key'> & RefundDeps, signer: AuthorizerSigner) {
  const c: Ctx = {
    deps,
    signer,
    relayers: relayersFromKeys(deps.config.relayerKeys),
    lock: createRelayerLock(deps.redis, deps.key),
  }
  return {
    /** The refund (see the module comment); never leaves the channel locked unless its transaction is undecided. */
    refund: (r: RefundRequest, log: FastifyBaseLogger) => refund(c, r, log),
  }
}

async function lockChannel(c: Ctx, r: RefundRequest, token: string, log: FastifyBaseLogger) {
  const until = Date.now() + BUSY_WAIT_MS
  const args = {
    channelId: r.channelId,
    type: 'refund' as const,
    maxClaimable: r.maxClaimable,
    amount: 0n,
    deposit: 0n,
    token,
    lockMs: REFUND_LOCK_MS,
  }
  for (let loaded = false; ;) {
    const o: ReserveOutcome = await c.deps.state.reserve({ ...args, nowMs: Date.now() })
    if (o.code === 'not_loaded' && !loaded) {
      loaded = true
      const ok = await c.deps.load(r.channelId, r.config, log)
      if (ok === false) return refused('invalid_batch_settlement_evm_channel_not_found', 'no deposit was made into it')
      if (ok !== true) return ok
      continue
    }
    if (o.code !== 'busy' || Date.now() >= until) return o
    await new Promise((resolve) => setTimeout(resolve, BUSY_POLL_MS))
  }
}

/** The lock's outcome as a refusal, or the channel locked for the refund. */
function locked(o: ReserveOutcome | RefundRefused): ChannelSnapshot | RefundRefused {
  if ('ok' in o) return o
  switch (o.code) {
    case 'reserved':
      return o.state
    case 'busy':
      return refused('invalid_batch_settlement_evm_channel_busy', 'a call on this channel is being served; retry')
    case 'not_loaded':
      return refused('invalid_batch_settlement_evm_channel_state_read_failed', 'retry shortly', { retry: true })
    case 'mismatch':
      return refused(
        'invalid_batch_settlement_evm_cumulative_amount_mismatch',
        `a refund voucher's maxClaimableAmount must be what was charged (${o.state.charged})`,
        { state: o.state },
      )
    case 'below_claimed':
      return refused('invalid_batch_settlement_evm_cumulative_below_claimed', '', { state: o.state })
    case 'not_found':
      return refused('invalid_batch_settlement_evm_refund_no_balance', 'the channel holds nothing')
    case 'exceeds_balance':
      return refused('invalid_batch_settlement_evm_cumulative_exceeds_balance', `balance ${o.state.balance}`)
    case 'withdrawing': // not for a refund (the script lets one through a pending withdrawal): unlocked
      return refused('invalid_batch_settlement_evm_withdrawal_pending', '')
  }
}

/** The refund's calldata: the claim of what was charged (when not claimed yet), then the refund. */
async function calldata(c: Ctx, r: RefundRequest, charged: bigint, on: OnchainChannel, amount: bigint): Promise<Hex> {
  const chainId = c.deps.config.chain.chainId
  const refundSig = await signRefund(c.signer, chainId, { channelId: r.channelId, nonce: on.refundNonce, amount })
  const refund = encodeRefundWithSignature(r.config, amount, on.refundNonce, refundSig)
  if (charged <= on.totalClaimed) return refund
  const claim = { config: r.config, maxClaimableAmount: r.maxClaimable, signature: r.signature, totalClaimed: charged }
  const entry = { channelId: r.channelId, maxClaimableAmount: r.maxClaimable, totalClaimed: charged }
  const claimSig = await signClaimBatch(c.signer, chainId, [entry])
  return encodeMulticall([encodeClaimWithSignature([claim], claimSig), refund])
}

/** Signs, records, broadcasts: the recorded id and hash; a refusal when it would revert or no relayer is free. */
async function send(
  c: Ctx,
  r: RefundRequest,
  data: Hex,
  amount: bigint,
): Promise<{ id: string; hash: Hex } | RefundRefused> {
  const { chain, config, store } = c.deps
  for (const relayer of c.relayers) {
    let gas: bigint
    try {
      gas = await chain.estimateGas({ account: relayer.address, to: contract, data })
    } catch (err) {
      const msg = (err as Error).message.split('\n')[0] ?? 'unknown'
      return refused('invalid_batch_settlement_evm_refund_simulation_failed', msg.slice(0, 200))
    }
    const held = await c.lock.hold(relayer.address, async () => {
      const tx = await signRelayerTx(chain, relayer, {
        to: contract,
        data,
        gas: (gas * 13n) / 10n,
        chainId: config.chain.chainId,
        maxFeePerGasCap: config.settlement.maxFeePerGasWei,
      })
      const id = randomUUID()
      await store.refundPending({
        id,
        network: config.chain.caip2,
        contract: BATCH_SETTLEMENT_ADDRESS,
        channelId: r.channelId,
        amount,
        txHash: tx.hash,
        relayer: relayer.address,
        txNonce: tx.nonce,
      })
      await broadcast(chain, tx.raw)
      await store.depositMoved(id, { status: 'sent' })
      return { id, hash: tx.hash }
    })
    if (held) return held.value
  }
  return refused('invalid_batch_settlement_evm_refund_transaction_failed', 'no relayer is free now; retry shortly', {
    retry: true,
  })
}

/** Under the channel's lock: the chain read, the amount decided, the transaction sent. */
async function prepareAndSend(c: Ctx, r: RefundRequest, charged: bigint) {
  const on = await readChannel(c.deps.chain, r.channelId)
  const claimed = on.totalClaimed > charged ? on.totalClaimed : charged
  const rest = on.balance > claimed ? on.balance - claimed : 0n
  if (rest === 0n)
    return refused('invalid_batch_settlement_evm_refund_no_balance', `balance ${on.balance}, charged ${claimed}`)
  if (r.amount !== undefined && r.amount > rest)
    return refused('invalid_batch_settlement_evm_refund_amount_invalid', `at most ${rest} is refundable`)
  const amount = r.amount ?? rest
  return send(c, r, await calldata(c, r, charged, on, amount), amount)
}

async function refund(c: Ctx, r: RefundRequest, log: FastifyBaseLogger): Promise<RefundOutcome> {
  const { chain, state, store } = c.deps
  if (c.relayers.length === 0)
    return refused('invalid_batch_settlement_evm_refund_transaction_failed', 'no relayer is configured')
  const token = randomUUID()
  const s = locked(await lockChannel(c, r, token, log))
  if ('ok' in s) return s
  let sent
  try {
    sent = await prepareAndSend(c, r, s.charged)
  } catch (err) {
    log.error({ err: (err as Error).message.split('\n')[0] }, 'batch refund failed before broadcast')
    sent = refused('invalid_batch_settlement_evm_refund_transaction_failed', 'retry shortly', { retry: true })
  }
  if ('ok' in sent) {
    await state.release(r.channelId, token).catch(() => {})
    return sent
  }
  log.info({ channelId: r.channelId, tx: sent.hash }, 'batch refund sent')
  let receipt: TransactionReceipt
  try {
    receipt = await chain.waitForTransactionReceipt({
      hash: sent.hash,
      timeout: RECEIPT_TIMEOUT_MS,
      pollingInterval: 250,
    })
  } catch {
    // the lock lapses by itself; the claim worker decides the transaction
    log.warn({ tx: sent.hash }, 'batch refund: no receipt yet; the claim worker decides it')
    return refused('invalid_batch_settlement_evm_refund_transaction_failed', `sent (${sent.hash}), not mined yet`, {
      retry: true,
    })
  }
  const ok = receipt.status === 'success'
  const refundedAmount = ok ? refundedBy(receipt, r.channelId) : 0n
  const after = await readChannel(chain, r.channelId)
  const status = ok ? ('confirmed' as const) : ('reverted' as const)
  await store.refundDecided({ id: sent.id, channelId: r.channelId, status, refunded: refundedAmount, chain: after })
  await state.refunded(r.channelId, token, after).catch(() => state.forget(r.channelId).catch(() => {}))
  if (!ok) return refused('invalid_batch_settlement_evm_refund_transaction_failed', `reverted (${sent.hash})`)
  return { ok: true, id: sent.id, txHash: sent.hash, refunded: refundedAmount, charged: s.charged, after }
}

/** What the receipt's `Refunded` events of the contract returned for the channel. */
function refundedBy(receipt: TransactionReceipt, channelId: Hex): bigint {
  const logs = receipt.logs.filter((l) => l.address.toLowerCase() === BATCH_SETTLEMENT_ADDRESS)
  return parseEventLogs({ abi: batchSettlementAbi, eventName: 'Refunded', logs })
    .filter((e) => e.args.channelId.toLowerCase() === channelId.toLowerCase())
    .reduce((s, e) => s + e.args.amount, 0n)
}

export type RefundExecutor = ReturnType<typeof createRefundExecutor>

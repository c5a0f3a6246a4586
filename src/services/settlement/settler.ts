import { randomUUID } from 'node:crypto'
import { SETTLEMENT_EXPIRY_MARGIN_SECONDS } from '../../x402/verify-requirements.js'
import { sql } from 'kysely'
import type { Logger } from 'pino'
import { getAddress, type Hex, type TransactionReceipt } from 'viem'
import { MULTICALL3_ADDRESS } from '../../chain/multicall3-abi.js'
import type { Deps } from '../../deps.js'
import type { Payment } from '../../db/database.js'
import { errorSummary, processLogger } from '../../logger.js'
import { MAX_HANDLER_TIMEOUT_MS } from '../../pool/handler-contract.js'
import { MAX_UPSTREAM_TIMEOUT_MS } from '../publishing/upstream-config.js'
import { createPayerCredit, type PayerCredit } from '../../ledger/payer-credit.js'
import {
  BLOCKING_REASONS,
  aggregate3Data,
  authorizationStates,
  balancesOf,
  findAuthorizationOutcome,
  paymentAuthKey,
  reasonFromRevert,
  simulateBatch,
  usedAuthorizations,
  walletDeployments,
  type FailureReason,
} from './chain-ops.js'
import { createFacilitatorClient, type FacilitatorClient } from './facilitator.js'
import { broadcast, createRelayerLock, relayersFromKeys, signRelayerTx, signReplacement, type Relayer, type WatchOnlyRelayer } from './relayer.js'
import { claimServed, readyGroups, transition, voidStaleVerified, type Moved } from '../../ledger/transitions.js'

/** Crash points for tests: a hook that throws stops the batch exactly there, as a kill would. */
export interface SettlementHooks {
  /** payments claimed (settling), nothing recorded */
  afterClaim?(payments: Payment[]): void | Promise<void>
  /** batch (hash, nonce, raw tx) recorded, not broadcast */
  beforeSend?(batch: { id: string; txHash: Hex }): void | Promise<void>
  /** broadcast, receipt not awaited */
  afterSend?(batch: { id: string; txHash: Hex }): void | Promise<void>
}

export interface SettlerOptions {
  batchSize?: number
  /** an authorization expiring within this many seconds is not submitted */
  expiryMarginS?: number
  /** default: config.settlement.maxFeePerGasWei (SETTLEMENT_MAX_FEE_GWEI) */
  maxFeePerGasCap?: bigint
  receiptTimeoutMs?: number
  /** how often a receipt is polled for (viem's client default is 4 s, a whole extra block or two) */
  receiptPollMs?: number
  /** a pending batch unmined this long after its last (re)signing is replaced with higher fees */
  replaceAfterMs?: number
  /** `settling` payments untouched this long with no pending batch are rechecked by the sweep */
  stuckAfterMs?: number
  /**
   * `verified` payments older than this never got an outcome from the proxy and are voided
   * (default: the longest a paid call may run, VOID_MARGIN_MS added)
   */
  voidVerifiedAfterMs?: number
  /** blocks per eth_getLogs request (default: config.settlement.logChunkBlocks, SETTLEMENT_LOG_CHUNK_BLOCKS) */
  logChunkBlocks?: number
  /** where warnings go (default: a logger at config.logLevel); the worker passes its own */
  log?: SettlerLog
  hooks?: SettlementHooks
  relayerKeys?: readonly Hex[]
  /** SETTLEMENT_MODE=facilitator: the external facilitator (default: config.settlement.facilitatorUrl) */
  facilitator?: FacilitatorClient
}

export interface SettleStats {
  settled: number
  failed: number
  requeued: number
  batches: number
}

const emptyStats = (): SettleStats => ({ settled: 0, failed: 0, requeued: 0, batches: 0 })

export type SettlerLog = Pick<Logger, 'info' | 'warn' | 'error'>

/** What the sweep waits past the longest call before voiding a payment with no outcome. */
export const VOID_MARGIN_MS = 60_000

/**
 * The longest a paid call can legitimately run before the proxy records its outcome: the
 * deployment's default handler limit, the longest a hosted handler may declare, or the longest
 * upstream timeout a seller may set. A `verified` payment is voided only well after that.
 */
export function longestCallMs(handlerTimeoutMs: number): number {
  return Math.max(handlerTimeoutMs, MAX_HANDLER_TIMEOUT_MS, MAX_UPSTREAM_TIMEOUT_MS)
}

/**
 * How far before a batch's recorded block its authorizations are looked for: the block is read
 * after authorizationState said "unused", so a use by someone else in between lies just before it
 * (and a load-balanced RPC may answer from a node a few blocks behind).
 */
const FROM_BLOCK_MARGIN = 100n

/**
 * The settlement engine: claims served payments, drops the ones that cannot settle, submits the
 * rest as one Multicall3 aggregate3 transaction per batch, and decides each payment's fate from
 * the receipt's AuthorizationUsed logs. Every decision comes from the chain, never a guess.
 */
export function createSettler(deps: Deps, opts: SettlerOptions = {}) {
  const { config, db, chain } = deps
  const batchSize = opts.batchSize ?? config.settlement.batchSize
  const marginS = opts.expiryMarginS ?? SETTLEMENT_EXPIRY_MARGIN_SECONDS
  const feeCap = opts.maxFeePerGasCap ?? config.settlement.maxFeePerGasWei
  const receiptTimeoutMs = opts.receiptTimeoutMs ?? 60_000
  const receiptPollMs = opts.receiptPollMs ?? 250
  const replaceAfterMs = opts.replaceAfterMs ?? 30_000
  const stuckAfterMs = opts.stuckAfterMs ?? 120_000
  const voidAfterMs = opts.voidVerifiedAfterMs ?? longestCallMs(config.handlers.timeoutMs) + VOID_MARGIN_MS
  const logChunkBlocks = BigInt(opts.logChunkBlocks ?? config.settlement.logChunkBlocks)
  const hooks = opts.hooks ?? {}
  const relayers = relayersFromKeys(opts.relayerKeys ?? config.relayerKeys)
  const lock = createRelayerLock(deps.redis, deps.key)
  const credit: PayerCredit = createPayerCredit(deps)
  // no payment signatures, raw transactions or keys go in here: ids, hashes, counts, reasons
  const log: SettlerLog = opts.log ?? processLogger(config.logLevel)
  let chainId: number | undefined
  const facilitator = config.settlement.mode === 'facilitator' ? (opts.facilitator ?? createFacilitatorClient(config.settlement.facilitatorUrl!)) : undefined

  async function getChainId(): Promise<number> {
    chainId ??= await chain.getChainId()
    return chainId
  }

  /** Exposure and cached balances follow every final state; blocking reasons block the payer. */
  async function afterFinal(moved: Moved[], reason?: string, paymentIdForBlock?: (m: Moved) => string, settled = false) {
    if (moved.length === 0) return
    const open = moved.filter((m) => m.from_status !== 'settled')
    // settled: the funds left the payer, so its cached balance drops with its exposure (one step)
    await Promise.allSettled(open.map((m) => (settled ? credit.settled : credit.release)({ payer: m.payer, asset: m.asset, value: BigInt(m.value) })))
    if (reason && BLOCKING_REASONS.has(reason)) {
      for (const m of moved) await credit.block(m.payer, reason, paymentIdForBlock ? paymentIdForBlock(m) : m.id)
    }
    const byAsset = new Map<string, Set<string>>()
    for (const m of moved) (byAsset.get(m.asset) ?? byAsset.set(m.asset, new Set()).get(m.asset)!).add(m.payer)
    for (const [asset, payers] of byAsset) {
      await credit.readBalances(asset, [...payers], (list) => balancesOf(chain, asset, list)).catch(() => null)
    }
  }

  async function fail(p: Payment[], reason: string, stats: SettleStats) {
    const moved = await transition(db, p.map((x) => x.id), ['settling'], 'failed', { reason })
    stats.failed += moved.length
    await afterFinal(moved, reason)
  }

  async function settleWith(p: Payment[], txHash: Hex, stats: SettleStats, data?: Record<string, unknown>) {
    const moved = await transition(db, p.map((x) => x.id), ['settling'], 'settled', { txHash, data })
    stats.settled += moved.length
    await afterFinal(moved, undefined, undefined, true)
  }

  async function requeue(p: Payment[], reason: string, stats: SettleStats) {
    const moved = await transition(db, p.map((x) => x.id), ['settling'], 'served', { reason, type: 'requeued' })
    stats.requeued += moved.length
  }

  /** The block from which p's authorization can have been used by our batches: the earliest one's, less a margin. */
  async function searchFromBlock(p: Payment): Promise<bigint | undefined> {
    const row = await db
      .selectFrom('settlement_batch_items as i')
      .innerJoin('settlement_batches as b', 'b.id', 'i.batch_id')
      .select((e) => e.fn.min('b.from_block').as('from_block'))
      .where('i.payment_id', '=', p.id)
      .executeTakeFirst()
    if (row?.from_block == null) return undefined
    const from = BigInt(row.from_block)
    return from > FROM_BLOCK_MARGIN ? from - FROM_BLOCK_MARGIN : 0n
  }

  /**
   * An authorization the token reports used: settled only if we find the mined tx that used it.
   * Should the chain not answer, the payment stays `settling` for the sweep to recheck later.
   */
  async function resolveUsed(p: Payment, stats: SettleStats) {
    let outcome: Awaited<ReturnType<typeof findAuthorizationOutcome>>
    try {
      outcome = await findAuthorizationOutcome(chain, p.asset, p, { fromBlock: await searchFromBlock(p), chunkBlocks: logChunkBlocks })
    } catch (err) {
      log.warn({ payment: p.id, err: errorSummary(err) }, 'settlement: could not look up how an authorization was used; left settling for the sweep')
      return
    }
    if (outcome.kind === 'used') {
      const receipt = await chain.getTransactionReceipt({ hash: outcome.txHash })
      if (receipt.status === 'success') return settleWith([p], outcome.txHash, stats, { found: 'logs' })
    }
    await fail([p], outcome.kind === 'canceled' ? 'authorization_canceled' : 'authorization_already_used', stats)
  }

  /** Why did this payment's transfer not happen? Asks the chain. */
  async function diagnose(p: Payment, revert?: string): Promise<FailureReason | 'used' | 'retry'> {
    const [used] = await authorizationStates(chain, p.asset, [p])
    if (used) return 'used'
    if (BigInt(p.valid_before) <= BigInt(Math.floor(Date.now() / 1000) + marginS)) return 'expired'
    const [bal] = await balancesOf(chain, p.asset, [p.payer])
    if (bal! < BigInt(p.value)) return 'insufficient_funds'
    if (revert) return reasonFromRevert(revert)
    return 'retry'
  }

  async function applyDiagnosis(p: Payment, d: FailureReason | 'used' | 'retry', stats: SettleStats) {
    if (d === 'used') return resolveUsed(p, stats)
    if (d === 'retry') return requeue([p], 'not_included', stats)
    return fail([p], d, stats)
  }

  /**
   * Payments that are `settling` with no live transaction: authorizationState decides
   * (used -> find the tx; unused -> back to served, or failed if expired).
   */
  async function recheck(payments: Payment[], stats: SettleStats) {
    if (payments.length === 0) return
    const byAsset = groupBy(payments, (p) => p.asset)
    for (const [asset, list] of byAsset) {
      const states = await authorizationStates(chain, asset, list)
      const unused: Payment[] = []
      for (const [i, p] of list.entries()) {
        if (states[i]) await resolveUsed(p, stats)
        else unused.push(p)
      }
      const now = BigInt(Math.floor(Date.now() / 1000) + marginS)
      await fail(unused.filter((p) => BigInt(p.valid_before) <= now), 'expired', stats)
      await requeue(unused.filter((p) => BigInt(p.valid_before) > now), 'recovered', stats)
    }
  }

  async function batchPayments(batchId: string): Promise<Payment[]> {
    return db
      .selectFrom('payments')
      .selectAll('payments')
      .innerJoin('settlement_batch_items as i', 'i.payment_id', 'payments.id')
      .where('i.batch_id', '=', batchId)
      .where('payments.status', '=', 'settling')
      .execute()
  }

  /** Decides every payment of a mined batch from its receipt. */
  async function finalizeBatch(batch: { id: string; asset: string }, receipt: TransactionReceipt, stats: SettleStats) {
    const payments = await batchPayments(batch.id)
    if (receipt.status === 'success') {
      const used = usedAuthorizations(batch.asset, receipt.logs)
      await settleWith(payments.filter((p) => used.has(paymentAuthKey(p))), receipt.transactionHash, stats)
      for (const p of payments.filter((p) => !used.has(paymentAuthKey(p)))) await applyDiagnosis(p, await diagnose(p), stats)
    } else {
      // the whole transaction reverted: nothing moved on chain, so everything is retried
      await recheck(payments, stats)
    }
    await db
      .updateTable('settlement_batches')
      .set({ status: receipt.status === 'success' ? 'confirmed' : 'reverted', gas_used: receipt.gasUsed, updated_at: new Date() })
      .where('id', '=', batch.id)
      .execute()
  }

  /**
   * True once no block can carry any of the batch's transfers: the latest block is at or past every
   * authorization's validBefore (later blocks are not earlier, and the token refuses a transfer in a
   * block at or past it). Expiry by the settler's clock with its margin, as `recheck` judges it, is
   * required too, so the recheck that follows fails those payments rather than requeueing them.
   */
  async function pastEveryValidBefore(batchId: string): Promise<boolean> {
    const row = await db
      .selectFrom('settlement_batch_items as i')
      .innerJoin('payments as p', 'p.id', 'i.payment_id')
      .select((e) => e.fn.max('p.valid_before').as('last'))
      .where('i.batch_id', '=', batchId)
      .executeTakeFirst()
    if (row?.last == null) return false
    const last = BigInt(row.last)
    if (last > BigInt(Math.floor(Date.now() / 1000) + marginS)) return false
    const head = await chain.getBlock({ blockTag: 'latest' })
    return head.timestamp >= last
  }

  /**
   * Resolves this relayer's pending batches (left by a crash or a timeout). Returns false while a
   * batch is still in flight: the relayer must not send anything else yet. A watch-only relayer
   * (its key no longer configured) gets the same but for the fee-bump replacement; its batch that no
   * block can carry any more is dropped, since without a key nothing else would ever end it.
   */
  async function resolvePending(relayer: Relayer | WatchOnlyRelayer, stats: SettleStats, waitMs = receiptTimeoutMs): Promise<boolean> {
    const pending = await db.selectFrom('settlement_batches').selectAll().where('relayer', '=', relayer.address.toLowerCase()).where('status', '=', 'pending').orderBy('nonce').execute()
    if (!relayer.account && pending.length > 0) {
      // only the sweep resolves a watch-only relayer, once per sweep: one warning per relayer and sweep
      log.warn(
        { relayer: relayer.address, batches: pending.map((b) => b.id) },
        'settlement: pending batches of a relayer whose key is not configured are rebroadcast, never fee-bumped; restore its key to RELAYER_PRIVATE_KEYS to allow replacements',
      )
    }
    for (const b of pending) {
      let receipt = await chain.getTransactionReceipt({ hash: b.tx_hash as Hex }).catch(() => null)
      if (!receipt) {
        const mined = await chain.getTransactionCount({ address: relayer.address, blockTag: 'latest' })
        if (mined > Number(b.nonce)) {
          // its nonce was used by another transaction: this one can never be mined
          await db.updateTable('settlement_batches').set({ status: 'dropped', updated_at: new Date() }).where('id', '=', b.id).execute()
          log.warn({ batch: b.id, relayer: relayer.address, nonce: String(b.nonce), txHash: b.tx_hash }, 'settlement batch dropped: its nonce was used by another transaction; rechecking its payments')
          await recheck(await batchPayments(b.id), stats)
          continue
        }
        if (!relayer.account && (await pastEveryValidBefore(b.id))) {
          await db.updateTable('settlement_batches').set({ status: 'dropped', updated_at: new Date() }).where('id', '=', b.id).where('status', '=', 'pending').execute()
          log.warn({ batch: b.id, relayer: relayer.address, nonce: String(b.nonce), txHash: b.tx_hash }, 'settlement batch dropped: every authorization in it has expired and its relayer key is not configured; rechecking its payments')
          await recheck(await batchPayments(b.id), stats)
          // it moves nothing now, but mined it uses its nonce, which the relayer's later batches wait for
          if (pending.some((o) => Number(o.nonce) > Number(b.nonce))) await broadcast(chain, b.raw_tx as Hex).catch((err) => log.warn({ batch: b.id, txHash: b.tx_hash, err: errorSummary(err) }, 'rebroadcast failed'))
          continue
        }
        const hash = await replaceOrRebroadcast(relayer, b)
        receipt = await chain.waitForTransactionReceipt({ hash, timeout: waitMs, pollingInterval: receiptPollMs }).catch(() => null)
        if (!receipt) return false
      }
      await finalizeBatch(b, receipt, stats)
    }
    return true
  }

  /**
   * A pending batch not mined yet: past `replaceAfterMs` since it was (re)signed it is replaced by
   * the same call with the same nonce and fees bumped (capped); otherwise, or when the cap leaves
   * no room, the recorded transaction is rebroadcast. The replacement is recorded before it is
   * sent. Should the old transaction be mined after all, the new hash never gets a receipt, the
   * nonce is used, and the batch is rechecked from authorizationState and the logs, as any other.
   * A watch-only relayer has no key to sign a replacement: its transaction is only rebroadcast.
   */
  async function replaceOrRebroadcast(relayer: Relayer | WatchOnlyRelayer, b: { id: string; tx_hash: string; raw_tx: string; updated_at: Date }): Promise<Hex> {
    if (relayer.account && Date.now() - new Date(b.updated_at).getTime() >= replaceAfterMs) {
      const next = await signReplacement(chain, relayer, b.raw_tx as Hex, feeCap).catch((err) => {
        log.warn({ batch: b.id, err: errorSummary(err) }, 'settlement batch replacement could not be signed; rebroadcasting')
        return null
      })
      if (next) {
        await db.updateTable('settlement_batches').set({ tx_hash: next.hash, raw_tx: next.raw, updated_at: new Date() }).where('id', '=', b.id).where('status', '=', 'pending').execute()
        log.warn({ batch: b.id, from: b.tx_hash, to: next.hash, maxFeePerGas: String(next.maxFeePerGas) }, 'settlement batch replaced')
        b.tx_hash = next.hash
        b.raw_tx = next.raw
        await broadcast(chain, next.raw).catch((err) => log.warn({ batch: b.id, txHash: next.hash, err: errorSummary(err) }, 'replacement refused'))
        return next.hash
      }
    }
    await broadcast(chain, b.raw_tx as Hex).catch((err) => log.warn({ batch: b.id, txHash: b.tx_hash, err: errorSummary(err) }, 'rebroadcast failed'))
    return b.tx_hash as Hex
  }

  /** Settles claimed payments of one asset in one transaction from `relayer` (lock held). */
  async function settleClaimed(relayer: Relayer, network: string, asset: string, claimed: Payment[], stats: SettleStats) {
    await hooks.afterClaim?.(claimed)
    const now = BigInt(Math.floor(Date.now() / 1000) + marginS)
    await fail(claimed.filter((p) => BigInt(p.valid_before) <= now), 'expired', stats)
    let live = claimed.filter((p) => BigInt(p.valid_before) > now)
    if (live.length === 0) return
    const states = await authorizationStates(chain, asset, live)
    for (const [i, p] of live.entries()) if (states[i]) await resolveUsed(p, stats)
    live = live.filter((_, i) => !states[i])
    if (live.length === 0) return
    // ERC-6492 wallets not deployed yet: the batch deploys each before its transfers
    const deployments = await walletDeployments(chain, live)
    const sim = await simulateBatch(chain, relayer.address, asset, live, deployments)
    const doomed = live.filter((_, i) => sim[i] !== undefined)
    for (const [i, p] of live.entries()) {
      if (sim[i] === undefined) continue
      const d = await diagnose(p, sim[i])
      await applyDiagnosis(p, d === 'retry' ? reasonFromRevert(sim[i]!) : d, stats)
    }
    live = live.filter((p) => !doomed.includes(p))
    if (live.length === 0) return

    const data = aggregate3Data(asset, live, deployments)
    const estimate = await chain.estimateGas({ account: relayer.address, to: MULTICALL3_ADDRESS, data })
    const fromBlock = await chain.getBlockNumber({ cacheTime: 0 })
    const signed = await signRelayerTx(chain, relayer, { to: MULTICALL3_ADDRESS, data, gas: (estimate * 13n) / 10n, chainId: await getChainId(), maxFeePerGasCap: feeCap })
    const batch = { id: randomUUID(), txHash: signed.hash }
    // Recorded before it leaves this process: whatever happens next, a restart can find it.
    await db.transaction().execute(async (trx) => {
      await trx
        .insertInto('settlement_batches')
        .values({ id: batch.id, network, asset, relayer: relayer.address.toLowerCase(), nonce: signed.nonce, tx_hash: signed.hash, raw_tx: signed.raw, from_block: fromBlock, size: live.length, status: 'pending' })
        .execute()
      await trx.insertInto('settlement_batch_items').values(live.map((p) => ({ batch_id: batch.id, payment_id: p.id }))).execute()
    })
    stats.batches++
    await hooks.beforeSend?.(batch)
    await broadcast(chain, signed.raw)
    await hooks.afterSend?.(batch)
    const receipt = await chain.waitForTransactionReceipt({ hash: signed.hash, timeout: receiptTimeoutMs, pollingInterval: receiptPollMs }).catch(() => null)
    if (receipt) await finalizeBatch({ id: batch.id, asset }, receipt, stats)
  }

  /**
   * Facilitator mode: one `/settle` per claimed payment, never for an authorization already used
   * on chain. The returned transaction counts only once its receipt shows the AuthorizationUsed
   * log; no answer leaves the payment to authorizationState on the next round.
   */
  async function settleViaFacilitator(client: FacilitatorClient, claimed: Payment[], stats: SettleStats, concurrency = 8) {
    await hooks.afterClaim?.(claimed)
    const queue = [...claimed]
    const one = async (p: Payment) => {
      if (BigInt(p.valid_before) <= BigInt(Math.floor(Date.now() / 1000) + marginS)) return fail([p], 'expired', stats)
      const [used] = await authorizationStates(chain, p.asset, [p])
      if (used) return resolveUsed(p, stats)
      const out = await client.settle(p, config)
      if (out.kind === 'unreachable') {
        log.warn({ payment: p.id, facilitator: client.url }, 'facilitator unreachable; payment requeued')
        return requeue([p], 'facilitator_unreachable', stats)
      }
      if (out.kind === 'refused') {
        log.warn({ payment: p.id, facilitator: client.url, reason: out.reason }, 'facilitator refused a settlement')
        const d = await diagnose(p)
        if (d !== 'retry') return applyDiagnosis(p, d, stats)
        const mapped = facilitatorReason(out.reason)
        return mapped ? fail([p], mapped, stats) : requeue([p], `facilitator:${out.reason}`, stats)
      }
      const receipt = await chain.waitForTransactionReceipt({ hash: out.txHash, timeout: receiptTimeoutMs, pollingInterval: receiptPollMs }).catch(() => null)
      if (!receipt) return // still `settling`: the sweep's recheck decides from authorizationState
      if (receipt.status === 'success' && usedAuthorizations(p.asset, receipt.logs).has(paymentAuthKey(p))) {
        return settleWith([p], out.txHash, stats, { facilitator: client.url })
      }
      await applyDiagnosis(p, await diagnose(p), stats)
    }
    await Promise.all(
      Array.from({ length: Math.min(concurrency, queue.length) }, async () => {
        for (let p = queue.shift(); p; p = queue.shift()) await one(p)
      }),
    )
  }

  /** Runs fn holding the first free relayer's lock; null when every relayer is busy. */
  async function withRelayer<T>(fn: (r: Relayer, held: () => boolean) => Promise<T>, prefer?: number): Promise<{ value: T } | null> {
    const start = prefer ?? Math.floor(Math.random() * Math.max(1, relayers.length))
    for (let i = 0; i < relayers.length; i++) {
      const r = relayers[(start + i) % relayers.length]!
      const held = await lock.hold(r.address, (stillHeld) => fn(r, stillHeld))
      if (held) return held
    }
    return null
  }

  return {
    relayers,
    credit,
    /**
     * One settlement round: take a free relayer, resolve what it left in flight, then claim and
     * settle batches until the backlog is empty or `budgetMs` is spent.
     */
    async runOnce(budgetMs = 10_000): Promise<SettleStats> {
      const stats = emptyStats()
      const deadline = Date.now() + budgetMs
      if (facilitator) {
        for (let more = true; more && Date.now() < deadline; ) {
          more = false
          for (const g of await readyGroups(db, config.chain.caip2)) {
            const claimed = await claimServed(db, { ...g, limit: batchSize })
            await settleViaFacilitator(facilitator, claimed, stats)
            if (claimed.length === batchSize) more = true
          }
        }
        return stats
      }
      await withRelayer(async (relayer, held) => {
        if (!(await resolvePending(relayer, stats))) return
        let more = true
        // no new batch once the relayer lock is lost: another worker may be using the relayer
        while (more && Date.now() < deadline && held()) {
          more = false
          for (const g of await readyGroups(db, config.chain.caip2)) {
            const claimed = await claimServed(db, { ...g, limit: batchSize })
            if (claimed.length === 0) continue
            await settleClaimed(relayer, g.network, g.asset, claimed, stats)
            if (claimed.length === batchSize) more = true
          }
        }
      })
      return stats
    },

    /** Settles payments already claimed (`settling`) by the caller, e.g. sync mode. */
    async settleClaimed(payments: Payment[], timeoutMs = 30_000): Promise<SettleStats | null> {
      const stats = emptyStats()
      const deadline = Date.now() + timeoutMs
      if (facilitator) {
        await settleViaFacilitator(facilitator, payments, stats)
        return stats
      }
      for (;;) {
        const r = await withRelayer(async (relayer) => {
          if (!(await resolvePending(relayer, stats, 5_000))) return false
          for (const [asset, list] of groupBy(payments, (p) => p.asset)) await settleClaimed(relayer, list[0]!.network, asset, list, stats)
          return true
        })
        if (r?.value) return stats
        if (Date.now() > deadline) return null
        await new Promise((res) => setTimeout(res, 50))
      }
    },

    /**
     * The recovery sweep: pending batches are resolved from their receipts, `settling` payments
     * with no live batch are rechecked on chain, `verified` ones the proxy never finished are voided.
     * Batches of a relayer whose key is no longer configured are resolved watch-only (by address).
     */
    async sweep(): Promise<SettleStats & { voided: number }> {
      const stats = emptyStats()
      // each step on its own: a relayer or an RPC call that fails must not stop the others (nor the voiding)
      const step = async (what: string, fn: () => Promise<unknown>) => {
        try {
          await fn()
        } catch (err) {
          log.warn({ step: what, err: errorSummary(err) }, 'settlement sweep step failed; retried on the next sweep')
        }
      }
      const withPending = await db.selectFrom('settlement_batches').select('relayer').distinct().where('status', '=', 'pending').where('created_at', '<', new Date(Date.now() - Math.min(stuckAfterMs, receiptTimeoutMs))).execute()
      for (const { relayer } of withPending) {
        const r: Relayer | WatchOnlyRelayer = relayers.find((k) => k.address.toLowerCase() === relayer) ?? { address: getAddress(relayer) }
        await step(`pending batches of relayer ${r.address}`, () => lock.hold(r.address, () => resolvePending(r, stats, 5_000)))
      }
      const stuck = await sql<Payment>`
        select p.* from payments p where p.status = 'settling' and p.updated_at < ${new Date(Date.now() - stuckAfterMs)}
          and not exists (select 1 from settlement_batch_items i join settlement_batches b on b.id = i.batch_id
                          where i.payment_id = p.id and b.status = 'pending')
        order by p.updated_at limit 1000`.execute(db)
      for (const [asset, list] of groupBy(stuck.rows, (p) => p.asset)) await step(`settling payments of ${asset}`, () => recheck(list, stats))
      const voided = await voidStaleVerified(db, new Date(Date.now() - voidAfterMs))
      await Promise.allSettled(voided.map((m) => credit.release({ payer: m.payer, asset: m.asset, value: BigInt(m.value) })))
      if (voided.length) log.warn({ count: voided.length, afterMs: voidAfterMs }, 'verified payments with no outcome from the proxy voided')
      return { ...stats, voided: voided.length }
    },

    /** Refreshes cached balances and rebuilds exposure of payers with open payments. */
    async refreshBalances(limit = 1000): Promise<number> {
      const rows = await db.selectFrom('payments').select(['payer', 'asset']).distinct().where('status', 'in', ['verified', 'served', 'settling']).limit(limit).execute()
      for (const [asset, list] of groupBy(rows, (r) => r.asset)) {
        const payers = list.map((r) => r.payer)
        for (const p of payers) await credit.rebuildExposure(asset, p)
        await credit.readBalances(asset, payers, (ps) => balancesOf(chain, asset, ps))
      }
      return rows.length
    },

    /** ETH balances of the relayers (for /readyz and alerts). */
    async relayerBalances(): Promise<Array<{ address: string; wei: bigint }>> {
      return Promise.all(relayers.map(async (r) => ({ address: getAddress(r.address), wei: await chain.getBalance({ address: r.address }) })))
    },
  }
}

export type Settler = ReturnType<typeof createSettler>

/** A facilitator's refusal the chain could not explain, as one of our failure reasons (or retry). */
function facilitatorReason(reason: string): FailureReason | undefined {
  if (/insufficient/i.test(reason)) return 'insufficient_funds'
  if (/signature/i.test(reason)) return 'invalid_signature'
  if (/valid_before|expired/i.test(reason)) return 'expired'
  return undefined
}

function groupBy<T>(items: T[], key: (t: T) => string): Map<string, T[]> {
  const m = new Map<string, T[]>()
  for (const it of items) {
    const k = key(it)
    const list = m.get(k)
    if (list) list.push(it)
    else m.set(k, [it])
  }
  return m
}

import type { Selectable } from 'kysely'
import type { Hex, TransactionReceipt } from 'viem'
import type { Payment, SettlementBatchesTable } from '../../db/database.js'
import { errorSummary } from '../../logger.js'
import { relayerSettlement } from '../../schemes/settlements.js'
import { paymentAuthKey, usedAuthorizations } from './chain-ops.js'
import { applyDiagnosis, diagnose, recheck, settleWith } from './reconcile.js'
import { broadcast, signReplacement, type Relayer, type WatchOnlyRelayer } from '../../chain/relayer.js'
import type { SettleStats, SettlerContext } from './settler-context.js'

/*
 * The lifecycle of a recorded batch (`settlement_batches`): decided from its receipt; while unmined
 * rebroadcast, then replaced with bumped fees; a nonce used by another transaction, or every
 * authorization past its validBefore, ends it and its payments are rechecked. Each operation takes
 * the settler's context (settler-context.ts) first.
 */

type PendingBatch = Selectable<SettlementBatchesTable>

async function batchPayments(ctx: SettlerContext, batchId: string): Promise<Payment[]> {
  return ctx.deps.db
    .selectFrom('payments')
    .selectAll('payments')
    .innerJoin('settlement_batch_items as i', 'i.payment_id', 'payments.id')
    .where('i.batch_id', '=', batchId)
    .where('payments.status', '=', 'settling')
    .execute()
}

/** Decides every payment of a mined batch from its receipt. */
export async function finalizeBatch(
  ctx: SettlerContext,
  batch: { id: string; asset: string },
  receipt: TransactionReceipt,
  stats: SettleStats,
) {
  const payments = await batchPayments(ctx, batch.id)
  if (receipt.status === 'success') {
    const logged = usedAuthorizations(batch.asset, receipt.logs)
    const used = (p: Payment) =>
      logged.has(paymentAuthKey(p)) || (relayerSettlement(p.scheme).settledWithoutLog?.(p, receipt) ?? false)
    await settleWith(ctx, payments.filter(used), receipt.transactionHash, stats)
    for (const p of payments.filter((p) => !used(p))) await applyDiagnosis(ctx, p, await diagnose(ctx, p), stats)
  } else {
    // the whole transaction reverted: nothing moved on chain, so everything is retried
    await recheck(ctx, payments, stats)
  }
  await ctx.deps.db
    .updateTable('settlement_batches')
    .set({
      status: receipt.status === 'success' ? 'confirmed' : 'reverted',
      gas_used: receipt.gasUsed,
      updated_at: new Date(),
    })
    .where('id', '=', batch.id)
    .execute()
}

/**
 * True once no block can carry any of the batch's transfers: the latest block is at or past every
 * authorization's validBefore (later blocks are not earlier, and the token refuses a transfer in a
 * block at or past it). Expiry by the settler's clock with its margin, as `recheck` judges it, is
 * required too, so the recheck that follows fails those payments rather than requeueing them.
 */
async function pastEveryValidBefore(ctx: SettlerContext, batchId: string): Promise<boolean> {
  const row = await ctx.deps.db
    .selectFrom('settlement_batch_items as i')
    .innerJoin('payments as p', 'p.id', 'i.payment_id')
    .select((e) => e.fn.max('p.valid_before').as('last'))
    .where('i.batch_id', '=', batchId)
    .executeTakeFirst()
  if (row?.last == null) return false
  const last = BigInt(row.last)
  if (last > BigInt(Math.floor(Date.now() / 1000) + ctx.marginS)) return false
  const head = await ctx.deps.chain.getBlock({ blockTag: 'latest' })
  return head.timestamp >= last
}

/**
 * Resolves this relayer's pending batches (left by a crash or a timeout). Returns false while a
 * batch is still in flight: the relayer must not send anything else yet. A watch-only relayer
 * (its key no longer configured) gets the same but for the fee-bump replacement; its batch that no
 * block can carry any more is dropped, since without a key nothing else would ever end it.
 */
export async function resolvePending(
  ctx: SettlerContext,
  relayer: Relayer | WatchOnlyRelayer,
  stats: SettleStats,
  waitMs = ctx.receiptTimeoutMs,
): Promise<boolean> {
  const pending = await ctx.deps.db
    .selectFrom('settlement_batches')
    .selectAll()
    .where('relayer', '=', relayer.address.toLowerCase())
    .where('status', '=', 'pending')
    .orderBy('nonce')
    .execute()
  if (!relayer.account && pending.length > 0) {
    // only the sweep resolves a watch-only relayer, once per sweep: one warning per relayer and sweep
    ctx.log.warn(
      { relayer: relayer.address, batches: pending.map((b) => b.id) },
      'settlement: pending batches of a relayer whose key is not configured are rebroadcast, never fee-bumped; restore its key to RELAYER_PRIVATE_KEYS to allow replacements',
    )
  }
  for (const b of pending) {
    const receipt =
      (await ctx.deps.chain.getTransactionReceipt({ hash: b.tx_hash as Hex }).catch(() => null)) ??
      (await resolveUnmined(ctx, relayer, b, pending, stats, waitMs))
    if (receipt === 'ended') continue
    if (!receipt) return false
    await finalizeBatch(ctx, b, receipt, stats)
  }
  return true
}

/**
 * A pending batch with no receipt: dropped (and its payments rechecked, 'ended') when its nonce was
 * used by another transaction, or, for a watch-only relayer, once no block can carry it; otherwise
 * replaced or rebroadcast and its receipt awaited (null when none came within `waitMs`).
 */
async function resolveUnmined(
  ctx: SettlerContext,
  relayer: Relayer | WatchOnlyRelayer,
  b: PendingBatch,
  pending: PendingBatch[],
  stats: SettleStats,
  waitMs: number,
): Promise<TransactionReceipt | 'ended' | null> {
  const { chain } = ctx.deps
  const mined = await chain.getTransactionCount({ address: relayer.address, blockTag: 'latest' })
  if (mined > Number(b.nonce)) {
    // its nonce was used by another transaction: this one can never be mined
    await dropBatch(ctx, relayer, b, false, 'its nonce was used by another transaction', stats)
    return 'ended'
  }
  if (!relayer.account && (await pastEveryValidBefore(ctx, b.id))) {
    await dropBatch(
      ctx,
      relayer,
      b,
      true,
      'every authorization in it has expired and its relayer key is not configured',
      stats,
    )
    // it moves nothing now, but mined it uses its nonce, which the relayer's later batches wait for
    if (pending.some((o) => Number(o.nonce) > Number(b.nonce)))
      await broadcast(chain, b.raw_tx as Hex).catch((err) =>
        ctx.log.warn({ batch: b.id, txHash: b.tx_hash, err: errorSummary(err) }, 'rebroadcast failed'),
      )
    return 'ended'
  }
  const hash = await replaceOrRebroadcast(ctx, relayer, b)
  return chain
    .waitForTransactionReceipt({ hash, timeout: waitMs, pollingInterval: ctx.receiptPollMs })
    .catch(() => null)
}

/** Marks a batch `dropped` (only if still pending, when `onlyPending`) and rechecks its payments. */
async function dropBatch(
  ctx: SettlerContext,
  relayer: Relayer | WatchOnlyRelayer,
  b: PendingBatch,
  onlyPending: boolean,
  why: string,
  stats: SettleStats,
) {
  let drop = ctx.deps.db
    .updateTable('settlement_batches')
    .set({ status: 'dropped', updated_at: new Date() })
    .where('id', '=', b.id)
  if (onlyPending) drop = drop.where('status', '=', 'pending')
  await drop.execute()
  ctx.log.warn(
    { batch: b.id, relayer: relayer.address, nonce: String(b.nonce), txHash: b.tx_hash },
    `settlement batch dropped: ${why}; rechecking its payments`,
  )
  await recheck(ctx, await batchPayments(ctx, b.id), stats)
}

/**
 * A pending batch not mined yet: past `replaceAfterMs` since it was (re)signed it is replaced by
 * the same call with the same nonce and fees bumped (capped); otherwise, or when the cap leaves
 * no room, the recorded transaction is rebroadcast. The replacement is recorded before it is
 * sent. Should the old transaction be mined after all, the new hash never gets a receipt, the
 * nonce is used, and the batch is rechecked from authorizationState and the logs, as any other.
 * A watch-only relayer has no key to sign a replacement: its transaction is only rebroadcast.
 */
async function replaceOrRebroadcast(
  ctx: SettlerContext,
  relayer: Relayer | WatchOnlyRelayer,
  b: { id: string; tx_hash: string; raw_tx: string; updated_at: Date },
): Promise<Hex> {
  const { chain } = ctx.deps
  const { log } = ctx
  if (relayer.account && Date.now() - new Date(b.updated_at).getTime() >= ctx.replaceAfterMs) {
    const next = await signReplacement(chain, relayer, b.raw_tx as Hex, ctx.feeCap).catch((err) => {
      log.warn(
        { batch: b.id, err: errorSummary(err) },
        'settlement batch replacement could not be signed; rebroadcasting',
      )
      return null
    })
    if (next) {
      await ctx.deps.db
        .updateTable('settlement_batches')
        .set({ tx_hash: next.hash, raw_tx: next.raw, updated_at: new Date() })
        .where('id', '=', b.id)
        .where('status', '=', 'pending')
        .execute()
      log.warn(
        { batch: b.id, from: b.tx_hash, to: next.hash, maxFeePerGas: String(next.maxFeePerGas) },
        'settlement batch replaced',
      )
      b.tx_hash = next.hash
      b.raw_tx = next.raw
      await broadcast(chain, next.raw).catch((err) =>
        log.warn({ batch: b.id, txHash: next.hash, err: errorSummary(err) }, 'replacement refused'),
      )
      return next.hash
    }
  }
  await broadcast(chain, b.raw_tx as Hex).catch((err) =>
    log.warn({ batch: b.id, txHash: b.tx_hash, err: errorSummary(err) }, 'rebroadcast failed'),
  )
  return b.tx_hash as Hex
}

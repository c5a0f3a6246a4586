import type { Hex } from 'viem'
import type { Payment } from '../../db/database.js'
import { transition, type Moved } from '../../ledger/transitions.js'
import { errorSummary } from '../../logger.js'
import {
  BLOCKING_REASONS,
  authorizationStates,
  balancesOf,
  findAuthorizationOutcome,
  reasonFromRevert,
  type FailureReason,
} from './chain-ops.js'
import { FROM_BLOCK_MARGIN, groupBy, type SettleStats, type SettlerContext } from './settler-context.js'

/*
 * Reconciliation: each payment's fate decided from the chain (settled from a receipt or the token's
 * logs; failed for a reason the chain shows; back to `served` when it was simply not included),
 * with the payer's exposure, cached balance and block following every final state. Each operation
 * takes the settler's context (settler-context.ts) first.
 */
/** Exposure and cached balances follow every final state; blocking reasons block the payer. */
async function afterFinal(
  ctx: SettlerContext,
  moved: Moved[],
  reason?: string,
  paymentIdForBlock?: (m: Moved) => string,
  settled = false,
) {
  if (moved.length === 0) return
  const { credit } = ctx
  const open = moved.filter((m) => m.from_status !== 'settled')
  // settled: the funds left the payer, so its cached balance drops with its exposure (one step)
  await Promise.allSettled(
    open.map((m) =>
      (settled ? credit.settled : credit.release)({ payer: m.payer, asset: m.asset, value: BigInt(m.value) }),
    ),
  )
  if (reason && BLOCKING_REASONS.has(reason)) {
    for (const m of moved) await credit.block(m.payer, reason, paymentIdForBlock ? paymentIdForBlock(m) : m.id)
  }
  const byAsset = new Map<string, Set<string>>()
  for (const m of moved) (byAsset.get(m.asset) ?? byAsset.set(m.asset, new Set()).get(m.asset)!).add(m.payer)
  for (const [asset, payers] of byAsset) {
    await credit.readBalances(asset, [...payers], (list) => balancesOf(ctx.deps.chain, asset, list)).catch(() => null)
  }
}

export async function fail(ctx: SettlerContext, p: Payment[], reason: string, stats: SettleStats) {
  const moved = await transition(
    ctx.deps.db,
    p.map((x) => x.id),
    ['settling'],
    'failed',
    { reason },
  )
  stats.failed += moved.length
  await afterFinal(ctx, moved, reason)
}

export async function settleWith(
  ctx: SettlerContext,
  p: Payment[],
  txHash: Hex,
  stats: SettleStats,
  data?: Record<string, unknown>,
) {
  const moved = await transition(
    ctx.deps.db,
    p.map((x) => x.id),
    ['settling'],
    'settled',
    { txHash, data },
  )
  stats.settled += moved.length
  await afterFinal(ctx, moved, undefined, undefined, true)
}

export async function requeue(ctx: SettlerContext, p: Payment[], reason: string, stats: SettleStats) {
  const moved = await transition(
    ctx.deps.db,
    p.map((x) => x.id),
    ['settling'],
    'served',
    { reason, type: 'requeued' },
  )
  stats.requeued += moved.length
}

/** The block from which p's authorization can have been used by our batches: the earliest one's, less a margin. */
async function searchFromBlock(ctx: SettlerContext, p: Payment): Promise<bigint | undefined> {
  const row = await ctx.deps.db
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
export async function resolveUsed(ctx: SettlerContext, p: Payment, stats: SettleStats) {
  const { chain } = ctx.deps
  let outcome: Awaited<ReturnType<typeof findAuthorizationOutcome>>
  try {
    outcome = await findAuthorizationOutcome(chain, p.asset, p, {
      fromBlock: await searchFromBlock(ctx, p),
      chunkBlocks: ctx.logChunkBlocks,
    })
  } catch (err) {
    ctx.log.warn(
      { payment: p.id, err: errorSummary(err) },
      'settlement: could not look up how an authorization was used; left settling for the sweep',
    )
    return
  }
  if (outcome.kind === 'used') {
    const receipt = await chain.getTransactionReceipt({ hash: outcome.txHash })
    if (receipt.status === 'success') return settleWith(ctx, [p], outcome.txHash, stats, { found: 'logs' })
  }
  await fail(ctx, [p], outcome.kind === 'canceled' ? 'authorization_canceled' : 'authorization_already_used', stats)
}

/** Why did this payment's transfer not happen? Asks the chain. */
export async function diagnose(
  ctx: SettlerContext,
  p: Payment,
  revert?: string,
): Promise<FailureReason | 'used' | 'retry'> {
  const { chain } = ctx.deps
  const [used] = await authorizationStates(chain, p.asset, [p])
  if (used) return 'used'
  if (BigInt(p.valid_before) <= BigInt(Math.floor(Date.now() / 1000) + ctx.marginS)) return 'expired'
  const [bal] = await balancesOf(chain, p.asset, [p.payer])
  if (bal! < BigInt(p.value)) return 'insufficient_funds'
  if (revert) return reasonFromRevert(revert)
  return 'retry'
}

export async function applyDiagnosis(
  ctx: SettlerContext,
  p: Payment,
  d: FailureReason | 'used' | 'retry',
  stats: SettleStats,
) {
  if (d === 'used') return resolveUsed(ctx, p, stats)
  if (d === 'retry') return requeue(ctx, [p], 'not_included', stats)
  return fail(ctx, [p], d, stats)
}

/**
 * Payments that are `settling` with no live transaction: authorizationState decides
 * (used -> find the tx; unused -> back to served, or failed if expired).
 */
export async function recheck(ctx: SettlerContext, payments: Payment[], stats: SettleStats) {
  if (payments.length === 0) return
  const byAsset = groupBy(payments, (p) => p.asset)
  for (const [asset, list] of byAsset) {
    const states = await authorizationStates(ctx.deps.chain, asset, list)
    const unused: Payment[] = []
    for (const [i, p] of list.entries()) {
      if (states[i]) await resolveUsed(ctx, p, stats)
      else unused.push(p)
    }
    const now = BigInt(Math.floor(Date.now() / 1000) + ctx.marginS)
    await fail(
      ctx,
      unused.filter((p) => BigInt(p.valid_before) <= now),
      'expired',
      stats,
    )
    await requeue(
      ctx,
      unused.filter((p) => BigInt(p.valid_before) > now),
      'recovered',
      stats,
    )
  }
}

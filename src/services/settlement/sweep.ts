import { sql } from 'kysely'
import { getAddress } from 'viem'
import type { Payment } from '../../db/database.js'
import { voidStaleVerified } from '../../ledger/transitions.js'
import { errorSummary } from '../../logger.js'
import { RELAYER_SETTLED } from '../../schemes/settlements.js'
import { resolvePending } from './batches.js'
import { recheck } from './reconcile.js'
import type { Relayer, WatchOnlyRelayer } from '../../chain/relayer.js'
import { emptyStats, groupBy, type SettleStats, type SettlerContext } from './settler-context.js'

/*
 * The settlement recovery sweep: what a crash, a timeout or a lost proxy outcome left behind is
 * resolved from the chain (pending batches, stuck `settling` payments) or voided (stale `verified`).
 */

/**
 * The recovery sweep: pending batches are resolved from their receipts, `settling` payments
 * with no live batch are rechecked on chain, `verified` ones the proxy never finished are voided.
 * Batches of a relayer whose key is no longer configured are resolved watch-only (by address).
 */
export async function sweep(ctx: SettlerContext): Promise<SettleStats & { voided: number }> {
  const stats = emptyStats()
  // each step on its own: a relayer or an RPC call that fails must not stop the others (nor the voiding)
  const step = async (what: string, fn: () => Promise<unknown>) => {
    try {
      await fn()
    } catch (err) {
      ctx.log.warn({ step: what, err: errorSummary(err) }, 'settlement sweep step failed; retried on the next sweep')
    }
  }
  await resolveStalePending(ctx, stats, step)
  const stuck = await stuckSettling(ctx)
  for (const [asset, list] of groupBy(stuck, (p) => p.asset))
    await step(`settling payments of ${asset}`, () => recheck(ctx, list, stats))
  const voided = await voidStale(ctx)
  return { ...stats, voided }
}

/** Every relayer with a batch pending longer than a receipt takes: its pending batches resolved. */
async function resolveStalePending(
  ctx: SettlerContext,
  stats: SettleStats,
  step: (what: string, fn: () => Promise<unknown>) => Promise<void>,
) {
  const withPending = await ctx.deps.db
    .selectFrom('settlement_batches')
    .select('relayer')
    .distinct()
    .where('status', '=', 'pending')
    .where('created_at', '<', new Date(Date.now() - Math.min(ctx.stuckAfterMs, ctx.receiptTimeoutMs)))
    .execute()
  for (const { relayer } of withPending) {
    const r: Relayer | WatchOnlyRelayer = ctx.relayers.find((k) => k.address.toLowerCase() === relayer) ?? {
      address: getAddress(relayer),
    }
    await step(`pending batches of relayer ${r.address}`, () =>
      ctx.lock.hold(r.address, () => resolvePending(ctx, r, stats, 5_000)),
    )
  }
}

/** `settling` payments untouched for `stuckAfterMs` with no pending batch (at most 1000, oldest first). */
async function stuckSettling(ctx: SettlerContext): Promise<Payment[]> {
  const stuck = await sql<Payment>`
    select p.* from payments p where p.status = 'settling' and p.scheme in (${sql.join([...RELAYER_SETTLED])}) and p.updated_at < ${new Date(Date.now() - ctx.stuckAfterMs)}
      and not exists (select 1 from settlement_batch_items i join settlement_batches b on b.id = i.batch_id
                      where i.payment_id = p.id and b.status = 'pending')
    order by p.updated_at limit 1000`.execute(ctx.deps.db)
  return stuck.rows
}

/** Voids `verified` payments the proxy never finished within `voidAfterMs`; how many. */
async function voidStale(ctx: SettlerContext): Promise<number> {
  const { voidAfterMs, credit } = ctx
  const voided = await voidStaleVerified(ctx.deps.db, new Date(Date.now() - voidAfterMs))
  // only payments our relayers settle hold the payer's credit (a deferred voucher is held by the escrow)
  await Promise.allSettled(
    voided
      .filter((m) => (RELAYER_SETTLED as readonly string[]).includes(m.scheme))
      .map((m) => credit.release({ payer: m.payer, asset: m.asset, value: BigInt(m.value) })),
  )
  if (voided.length)
    ctx.log.warn(
      { count: voided.length, afterMs: voidAfterMs },
      'verified payments with no outcome from the proxy voided',
    )
  return voided.length
}

import type { Payment } from '../../db/database.js'
import { claimServed, orphanedClaims, readyGroups } from '../../ledger/transitions.js'
import { RELAYER_SETTLEMENTS, relayerSettlement } from '../../schemes/settlements.js'
import { resolvePending } from './batches.js'
import type { FacilitatorClient } from './facilitator.js'
import { recheck } from './reconcile.js'
import { RELAYER_LOCK_TTL_MS, type Relayer } from '../../chain/relayer.js'
import { sendBatch } from './send.js'
import { settleViaFacilitator } from './settle-via-facilitator.js'
import { emptyStats, groupBy, type SettleStats, type SettlerContext } from './settler-context.js'

/*
 * Settlement rounds: the worker's round (claim and send until the backlog is empty or the budget
 * spent) and sync mode's settlement of payments it already claimed, each holding a relayer's lock.
 */

/**
 * One settlement round: take a free relayer, resolve what it left in flight, then claim and
 * settle batches until the backlog is empty or `budgetMs` is spent.
 */
export async function runOnce(ctx: SettlerContext, budgetMs = 10_000): Promise<SettleStats> {
  const stats = emptyStats()
  const deadline = Date.now() + budgetMs
  if (ctx.facilitator) {
    await facilitatorRound(ctx, ctx.facilitator, stats, deadline)
    return stats
  }
  const { db, config } = ctx.deps
  const { batchSize } = ctx
  await withRelayer(
    ctx,
    async (relayer, held) => {
      if (!(await resolvePending(ctx, relayer, stats))) return
      await recoverOrphans(ctx, relayer, stats)
      let more = true
      // no new batch once the relayer lock is lost: another worker may be using the relayer
      while (more && Date.now() < deadline && held()) {
        more = false
        for (const g of await readyGroups(db, config.chain.caip2)) {
          const claimed = await claimServed(db, { ...g, limit: batchSize, relayer: relayer.address })
          if (claimed.length === 0) continue
          await sendBatch(ctx, relayer, g.network, g.asset, claimed, stats, held)
          if (claimed.length === batchSize) more = true
        }
      }
    },
    relayerIndex(ctx, await pinnedWaiting(ctx)),
  )
  return stats
}

/** Facilitator mode's round: claim and hand to the facilitator until the backlog or the time is spent. */
async function facilitatorRound(
  ctx: SettlerContext,
  facilitator: FacilitatorClient,
  stats: SettleStats,
  deadline: number,
) {
  const { db, config } = ctx.deps
  for (let more = true; more && Date.now() < deadline;) {
    more = false
    for (const g of await readyGroups(db, config.chain.caip2)) {
      const claimed = await claimServed(db, { ...g, limit: ctx.batchSize })
      await settleViaFacilitator(ctx, facilitator, claimed, stats)
      if (claimed.length === ctx.batchSize) more = true
    }
  }
}

/**
 * Payments pinned to one relayer (upto: the facilitator the endpoint's challenge names) can be
 * settled by it alone: while any wait, the relayer of one of them (tried first).
 */
async function pinnedWaiting(ctx: SettlerContext): Promise<string | undefined> {
  const pinnedSchemes = RELAYER_SETTLEMENTS.filter((s) => s.pinned).map((s) => s.scheme)
  const waiting =
    pinnedSchemes.length === 0
      ? undefined
      : await ctx.deps.db
          .selectFrom('payments')
          .selectAll()
          .where('scheme', 'in', pinnedSchemes)
          .where('status', '=', 'served')
          .limit(1)
          .executeTakeFirst()
  return waiting && pinnedRelayer(waiting)
}

/** Settles payments already claimed (`settling`) by the caller, e.g. sync mode. */
export async function settleClaimed(
  ctx: SettlerContext,
  payments: Payment[],
  timeoutMs = 30_000,
): Promise<SettleStats | null> {
  const stats = emptyStats()
  const deadline = Date.now() + timeoutMs
  if (ctx.facilitator) {
    await settleViaFacilitator(ctx, ctx.facilitator, payments, stats)
    return stats
  }
  for (;;) {
    const r = await withRelayer(
      ctx,
      async (relayer) => {
        if (!(await resolvePending(ctx, relayer, stats, 5_000))) return false
        for (const [asset, list] of groupBy(payments, (p) => p.asset))
          await sendBatch(ctx, relayer, list[0]!.network, asset, list, stats)
        return true
      },
      relayerIndex(
        ctx,
        payments.map(pinnedRelayer).find((r) => r !== undefined),
      ),
    )
    if (r?.value) return stats
    if (Date.now() > deadline) return null
    await new Promise((res) => setTimeout(res, 50))
  }
}

/** The index of the relayer at `address` (a pinned payment's relayer); undefined when none is. */
function relayerIndex(ctx: SettlerContext, address: string | null | undefined): number | undefined {
  if (!address) return undefined
  const i = ctx.relayers.findIndex((r) => r.address.toLowerCase() === address.toLowerCase())
  return i < 0 ? undefined : i
}

/** Runs fn holding the first free relayer's lock; null when every relayer is busy. */
async function withRelayer<T>(
  ctx: SettlerContext,
  fn: (r: Relayer, held: () => boolean) => Promise<T>,
  prefer?: number,
): Promise<{ value: T } | null> {
  const { relayers, lock } = ctx
  const start = prefer ?? Math.floor(Math.random() * Math.max(1, relayers.length))
  for (let i = 0; i < relayers.length; i++) {
    const r = relayers[(start + i) % relayers.length]!
    const held = await lock.hold(r.address, (stillHeld) => fn(r, stillHeld))
    if (held) return held
  }
  return null
}

/**
 * Claims a previous holder of this relayer made and never batched (it was killed between claim
 * and batch, or lost the lock) are rechecked now rather than after the sweep's `stuckAfterMs`:
 * used on chain they settle, otherwise back to `served` (or failed if expired). Only claims older
 * than the lock's TTL: a holder that lost the lock stops claiming within it.
 */
async function recoverOrphans(ctx: SettlerContext, relayer: Relayer, stats: SettleStats) {
  const orphans = await orphanedClaims(ctx.deps.db, { relayer: relayer.address, olderThanMs: RELAYER_LOCK_TTL_MS })
  if (orphans.length === 0) return
  ctx.log.warn(
    { relayer: relayer.address, count: orphans.length },
    'settlement: claims a previous holder of this relayer never batched are rechecked',
  )
  await recheck(ctx, orphans, stats)
}

/** The relayer a payment's scheme pins it to (upto: its facilitator); undefined when any may settle it. */
function pinnedRelayer(p: Payment): string | undefined {
  return relayerSettlement(p.scheme).pinned?.relayerOf(p) ?? undefined
}

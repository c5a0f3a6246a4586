import { sql } from 'kysely'
import { getAddress } from 'viem'
import type { Deps } from '../../deps.js'
import type { Payment } from '../../db/database.js'
import { claimServed, orphanedClaims, readyGroups, voidStaleVerified } from '../../ledger/transitions.js'
import { errorSummary } from '../../logger.js'
import { createBatchLifecycle } from './batches.js'
import { balancesOf } from './chain-ops.js'
import { createReconciler } from './reconcile.js'
import { RELAYER_LOCK_TTL_MS, type Relayer, type WatchOnlyRelayer } from './relayer.js'
import { createSender } from './send.js'
import { emptyStats, groupBy, settlerContext, type SettleStats, type SettlerOptions } from './settler-context.js'

export {
  longestCallMs,
  VOID_MARGIN_MS,
  type SettlementHooks,
  type SettleStats,
  type SettlerLog,
  type SettlerOptions,
} from './settler-context.js'

/**
 * The settlement engine: claims served payments, drops the ones that cannot settle, submits the
 * rest as one Multicall3 aggregate3 transaction per batch, and decides each payment's fate from
 * the receipt's AuthorizationUsed logs. Every decision comes from the chain, never a guess.
 *
 * Its parts: reconcile.ts (each payment's fate from the chain), batches.ts (a recorded batch's
 * lifecycle), send.ts (claim and send); this file runs rounds, the sweep and the refreshes.
 */
export function createSettler(deps: Deps, opts: SettlerOptions = {}) {
  const ctx = settlerContext(deps, opts)
  const { db, chain, config } = deps
  const { batchSize, stuckAfterMs, receiptTimeoutMs, voidAfterMs, relayers, lock, credit, log, facilitator } = ctx
  const reconcile = createReconciler(ctx)
  const { recheck } = reconcile
  const batches = createBatchLifecycle(ctx, reconcile)
  const { resolvePending } = batches
  const { sendBatch, settleViaFacilitator } = createSender(ctx, reconcile, batches)

  /** The index of the relayer at `address` (an upto payment's facilitator); undefined when none is. */
  function relayerIndex(address: string | null | undefined): number | undefined {
    if (!address) return undefined
    const i = relayers.findIndex((r) => r.address.toLowerCase() === address.toLowerCase())
    return i < 0 ? undefined : i
  }

  /** Runs fn holding the first free relayer's lock; null when every relayer is busy. */
  async function withRelayer<T>(
    fn: (r: Relayer, held: () => boolean) => Promise<T>,
    prefer?: number,
  ): Promise<{ value: T } | null> {
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
  async function recoverOrphans(relayer: Relayer, stats: SettleStats) {
    const orphans = await orphanedClaims(db, { relayer: relayer.address, olderThanMs: RELAYER_LOCK_TTL_MS })
    if (orphans.length === 0) return
    log.warn(
      { relayer: relayer.address, count: orphans.length },
      'settlement: claims a previous holder of this relayer never batched are rechecked',
    )
    await recheck(orphans, stats)
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
        for (let more = true; more && Date.now() < deadline;) {
          more = false
          for (const g of await readyGroups(db, config.chain.caip2)) {
            const claimed = await claimServed(db, { ...g, limit: batchSize })
            await settleViaFacilitator(facilitator, claimed, stats)
            if (claimed.length === batchSize) more = true
          }
        }
        return stats
      }
      // upto payments can be settled only by their facilitator (the relayer the endpoint's challenge
      // names): while any wait, one of their facilitators is tried first
      const uptoWaiting = await db
        .selectFrom('payments')
        .select('facilitator')
        .where('scheme', '=', 'upto')
        .where('status', '=', 'served')
        .limit(1)
        .executeTakeFirst()
      await withRelayer(async (relayer, held) => {
        if (!(await resolvePending(relayer, stats))) return
        await recoverOrphans(relayer, stats)
        let more = true
        // no new batch once the relayer lock is lost: another worker may be using the relayer
        while (more && Date.now() < deadline && held()) {
          more = false
          for (const g of await readyGroups(db, config.chain.caip2)) {
            const claimed = await claimServed(db, { ...g, limit: batchSize, relayer: relayer.address })
            if (claimed.length === 0) continue
            await sendBatch(relayer, g.network, g.asset, claimed, stats, held)
            if (claimed.length === batchSize) more = true
          }
        }
      }, relayerIndex(uptoWaiting?.facilitator))
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
        const r = await withRelayer(
          async (relayer) => {
            if (!(await resolvePending(relayer, stats, 5_000))) return false
            for (const [asset, list] of groupBy(payments, (p) => p.asset))
              await sendBatch(relayer, list[0]!.network, asset, list, stats)
            return true
          },
          relayerIndex(payments.find((p) => p.scheme === 'upto')?.facilitator),
        )
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
      const withPending = await db
        .selectFrom('settlement_batches')
        .select('relayer')
        .distinct()
        .where('status', '=', 'pending')
        .where('created_at', '<', new Date(Date.now() - Math.min(stuckAfterMs, receiptTimeoutMs)))
        .execute()
      for (const { relayer } of withPending) {
        const r: Relayer | WatchOnlyRelayer = relayers.find((k) => k.address.toLowerCase() === relayer) ?? {
          address: getAddress(relayer),
        }
        await step(`pending batches of relayer ${r.address}`, () =>
          lock.hold(r.address, () => resolvePending(r, stats, 5_000)),
        )
      }
      const stuck = await sql<Payment>`
        select p.* from payments p where p.status = 'settling' and p.scheme in ('exact', 'upto') and p.updated_at < ${new Date(Date.now() - stuckAfterMs)}
          and not exists (select 1 from settlement_batch_items i join settlement_batches b on b.id = i.batch_id
                          where i.payment_id = p.id and b.status = 'pending')
        order by p.updated_at limit 1000`.execute(db)
      for (const [asset, list] of groupBy(stuck.rows, (p) => p.asset))
        await step(`settling payments of ${asset}`, () => recheck(list, stats))
      const voided = await voidStaleVerified(db, new Date(Date.now() - voidAfterMs))
      // only exact payments hold the payer's credit (a deferred voucher is held by the escrow)
      await Promise.allSettled(
        voided
          .filter((m) => m.scheme === 'exact' || m.scheme === 'upto')
          .map((m) => credit.release({ payer: m.payer, asset: m.asset, value: BigInt(m.value) })),
      )
      if (voided.length)
        log.warn(
          { count: voided.length, afterMs: voidAfterMs },
          'verified payments with no outcome from the proxy voided',
        )
      return { ...stats, voided: voided.length }
    },

    /** Refreshes cached balances and rebuilds exposure of payers with open payments. */
    async refreshBalances(limit = 1000): Promise<number> {
      const rows = await db
        .selectFrom('payments')
        .select(['payer', 'asset'])
        .distinct()
        .where('status', 'in', ['verified', 'served', 'settling'])
        .where('scheme', 'in', ['exact', 'upto'])
        .limit(limit)
        .execute()
      for (const [asset, list] of groupBy(rows, (r) => r.asset)) {
        const payers = list.map((r) => r.payer)
        for (const p of payers) await credit.rebuildExposure(asset, p)
        await credit.readBalances(asset, payers, (ps) => balancesOf(chain, asset, ps))
      }
      return rows.length
    },

    /** ETH balances of the relayers (for /readyz and alerts). */
    async relayerBalances(): Promise<Array<{ address: string; wei: bigint }>> {
      return Promise.all(
        relayers.map(async (r) => ({
          address: getAddress(r.address),
          wei: await chain.getBalance({ address: r.address }),
        })),
      )
    },
  }
}

export type Settler = ReturnType<typeof createSettler>

import { getAddress } from 'viem'
import type { CoreDeps as Deps } from '../../core-deps.js'
import type { Payment } from '../../db/database.js'
import { OPEN_STATUSES } from '../../ledger/statuses.js'
import { RELAYER_SETTLED } from '../../schemes/settlements.js'
import { balancesOf } from './chain-ops.js'
import { runOnce, settleClaimed } from './rounds.js'
import {
  groupBy,
  settlerContext,
  type SettleStats,
  type SettlerContext,
  type SettlerOptions,
} from './settler-context.js'
import { sweep } from './sweep.js'

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
 * Its parts, each an operation on the settler's context (settler-context.ts): reconcile.ts (each
 * payment's fate from the chain), batches.ts (a recorded batch's lifecycle), send.ts and send-tx.ts
 * (claim and send), settle-via-facilitator.ts (facilitator mode), rounds.ts (the worker's rounds and
 * sync mode), sweep.ts (the recovery sweep); this file wires them and runs the refreshes.
 */
export function createSettler(deps: Deps, opts: SettlerOptions = {}) {
  const ctx = settlerContext(deps, opts)
  return {
    relayers: ctx.relayers,
    credit: ctx.credit,
    /**
     * One settlement round: take a free relayer, resolve what it left in flight, then claim and
     * settle batches until the backlog is empty or `budgetMs` is spent.
     */
    runOnce: (budgetMs?: number): Promise<SettleStats> => runOnce(ctx, budgetMs),
    /** Settles payments already claimed (`settling`) by the caller, e.g. sync mode. */
    settleClaimed: (payments: Payment[], timeoutMs?: number): Promise<SettleStats | null> =>
      settleClaimed(ctx, payments, timeoutMs),
    /**
     * The recovery sweep: pending batches are resolved from their receipts, `settling` payments
     * with no live batch are rechecked on chain, `verified` ones the proxy never finished are voided.
     */
    sweep: (): Promise<SettleStats & { voided: number }> => sweep(ctx),
    /** Refreshes cached balances and rebuilds exposure of payers with open payments. */
    refreshBalances: (limit?: number): Promise<number> => refreshBalances(ctx, limit),
    /** ETH balances of the relayers (for /readyz and alerts). */
    relayerBalances: (): Promise<Array<{ address: string; wei: bigint }>> => relayerBalances(ctx),
  }
}

/** Refreshes cached balances and rebuilds exposure of payers with open payments. */
async function refreshBalances(ctx: SettlerContext, limit = 1000): Promise<number> {
  const { db, chain } = ctx.deps
  const { credit } = ctx
  const rows = await db
    .selectFrom('payments')
    .select(['payer', 'asset'])
    .distinct()
    .where('status', 'in', OPEN_STATUSES)
    .where('scheme', 'in', RELAYER_SETTLED)
    .limit(limit)
    .execute()
  for (const [asset, list] of groupBy(rows, (r) => r.asset)) {
    const payers = list.map((r) => r.payer)
    for (const p of payers) await credit.rebuildExposure(asset, p)
    await credit.readBalances(asset, payers, (ps) => balancesOf(chain, asset, ps))
  }
  return rows.length
}

/** ETH balances of the relayers (for /readyz and alerts). */
async function relayerBalances(ctx: SettlerContext): Promise<Array<{ address: string; wei: bigint }>> {
  return Promise.all(
    ctx.relayers.map(async (r) => ({
      address: getAddress(r.address),
      wei: await ctx.deps.chain.getBalance({ address: r.address }),
    })),
  )
}

export type Settler = ReturnType<typeof createSettler>

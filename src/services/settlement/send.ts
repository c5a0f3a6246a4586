import type { Payment } from '../../db/database.js'
import { relayerSettlement } from '../../schemes/settlements.js'
import type { SettlementPath } from '../../seam/types.js'
import { authorizationStates } from './chain-ops.js'
import { finalizeBatch } from './batches.js'
import { fail, requeue, resolveUsed } from './reconcile.js'
import type { Relayer } from '../../chain/relayer.js'
import { deployWalletsFirst, sendAggregate, sendDirect, type SendTarget, type SentBatch } from './send-tx.js'
import { groupBy, type SettleStats, type SettlerContext } from './settler-context.js'

/*
 * Claim and send: claimed payments that can still settle go into one Multicall3 transaction,
 * simulated first, recorded in Postgres before it is broadcast (upto payments on a chain whose
 * upto proxy refuses Multicall3: one such transaction each; send-tx.ts); in facilitator mode, one
 * `/settle` per payment (settle-via-facilitator.ts).
 */

/**
 * Settles claimed payments of one asset in one transaction from `relayer` (lock held). Once
 * `held()` says the lock was lost, no batch is recorded: the claims stay for the relayer's next
 * holder (settler.ts, recoverOrphans), which may already be using its nonces.
 */
export async function sendBatch(
  ctx: SettlerContext,
  relayer: Relayer,
  network: string,
  asset: string,
  claimed: Payment[],
  stats: SettleStats,
  held: () => boolean = () => true,
) {
  await ctx.hooks.afterClaim?.(claimed)
  const to: SendTarget = { relayer, network, stats, held }
  const live = await stillUnsettled(ctx, to, asset, claimed)
  if (live.length === 0) return
  const { batch, direct: allDirect } = await byPath(ctx, live, stats)
  const deploying = await deployWalletsFirst(ctx, to, allDirect)
  const direct = allDirect.filter((p) => !deploying.includes(p))

  const settled = (sent: SentBatch[]) =>
    Promise.all(
      sent.map(async (b) => {
        const receipt = await ctx.deps.chain
          .waitForTransactionReceipt({
            hash: b.txHash,
            timeout: ctx.receiptTimeoutMs,
            pollingInterval: ctx.receiptPollMs,
          })
          .catch(() => null)
        if (receipt) await finalizeBatch(ctx, { id: b.id, asset }, receipt, stats)
      }),
    )
  const batches = settled([...(await sendAggregate(ctx, to, asset, batch)), ...deploying.sent])
  // direct transactions `directInFlight` at a time: nodes hold only so many pending per sender
  for (let i = 0; i < direct.length && held(); i += ctx.directInFlight) {
    const sent: SentBatch[] = []
    for (const p of direct.slice(i, i + ctx.directInFlight)) {
      const one = await sendDirect(ctx, to, p)
      if (one) sent.push(one)
    }
    await settled(sent)
  }
  await batches
}

/**
 * The claimed payments this relayer can still settle: one pinned to another relayer (upto: the
 * facilitator its witness names) goes back, an expired one fails, one already used on chain is
 * resolved from the chain.
 */
async function stillUnsettled(ctx: SettlerContext, to: SendTarget, asset: string, claimed: Payment[]) {
  const { relayer, stats } = to
  const foreign = new Set<Payment>()
  for (const p of claimed) {
    const pinned = relayerSettlement(p.scheme).pinned
    if (pinned && pinned.relayerOf(p) !== relayer.address.toLowerCase()) foreign.add(p)
  }
  for (const [, list] of groupBy([...foreign], (p) => p.scheme))
    await requeue(ctx, list, relayerSettlement(list[0]!.scheme).pinned!.otherRelayerReason, stats)
  claimed = claimed.filter((p) => !foreign.has(p))
  const now = BigInt(Math.floor(Date.now() / 1000) + ctx.marginS)
  await fail(
    ctx,
    claimed.filter((p) => BigInt(p.valid_before) <= now),
    'expired',
    stats,
  )
  const live = claimed.filter((p) => BigInt(p.valid_before) > now)
  if (live.length === 0) return []
  const states = await authorizationStates(ctx.deps.chain, asset, live)
  for (const [i, p] of live.entries()) if (states[i]) await resolveUsed(ctx, p, stats)
  return live.filter((_, i) => !states[i])
}

/**
 * Each scheme's payments go where the chain takes its calls: in the batch, one transaction each
 * (upto's reference proxy refuses Multicall3), or back to wait (no contract to call).
 */
async function byPath(ctx: SettlerContext, live: Payment[], stats: SettleStats) {
  const paths = new Map<string, SettlementPath>()
  for (const scheme of new Set(live.map((p) => p.scheme)))
    paths.set(scheme, await ctx.pathOf(relayerSettlement(scheme)))
  for (const [scheme, list] of groupBy(
    live.filter((p) => paths.get(p.scheme) === 'absent'),
    (p) => p.scheme,
  ))
    await requeue(ctx, list, relayerSettlement(scheme).absentReason ?? `${scheme}_contract_missing`, stats)
  return {
    direct: live.filter((p) => paths.get(p.scheme) === 'direct'),
    batch: live.filter((p) => paths.get(p.scheme) === 'batch'),
  }
}

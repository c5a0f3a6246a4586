import type { Payment } from '../../db/database.js'
import { authorizationStates, paymentAuthKey, usedAuthorizations, type FailureReason } from './chain-ops.js'
import type { FacilitatorClient } from './facilitator.js'
import { applyDiagnosis, diagnose, fail, requeue, resolveUsed, settleWith } from './reconcile.js'
import type { SettleStats, SettlerContext } from './settler-context.js'

/*
 * SETTLEMENT_MODE=facilitator: claimed payments settled by an external facilitator's `/settle`,
 * one call per payment, each outcome confirmed from the chain.
 */

/**
 * Facilitator mode: one `/settle` per claimed payment, never for an authorization already used
 * on chain. The returned transaction counts only once its receipt shows the AuthorizationUsed
 * log; no answer leaves the payment to authorizationState on the next round.
 */
export async function settleViaFacilitator(
  ctx: SettlerContext,
  client: FacilitatorClient,
  claimed: Payment[],
  stats: SettleStats,
  concurrency = 8,
) {
  await ctx.hooks.afterClaim?.(claimed)
  const queue = [...claimed]
  await Promise.all(
    Array.from({ length: Math.min(concurrency, queue.length) }, async () => {
      for (let p = queue.shift(); p; p = queue.shift()) await settleOne(ctx, client, p, stats)
    }),
  )
}

async function settleOne(ctx: SettlerContext, client: FacilitatorClient, p: Payment, stats: SettleStats) {
  const { chain, config } = ctx.deps
  const { log } = ctx
  if (BigInt(p.valid_before) <= BigInt(Math.floor(Date.now() / 1000) + ctx.marginS))
    return fail(ctx, [p], 'expired', stats)
  const [used] = await authorizationStates(chain, p.asset, [p])
  if (used) return resolveUsed(ctx, p, stats)
  const out = await client.settle(p, config)
  if (out.kind === 'unreachable') {
    log.warn({ payment: p.id, facilitator: client.url }, 'facilitator unreachable; payment requeued')
    return requeue(ctx, [p], 'facilitator_unreachable', stats)
  }
  if (out.kind === 'refused') {
    log.warn({ payment: p.id, facilitator: client.url, reason: out.reason }, 'facilitator refused a settlement')
    const d = await diagnose(ctx, p)
    if (d !== 'retry') return applyDiagnosis(ctx, p, d, stats)
    const mapped = facilitatorReason(out.reason)
    return mapped ? fail(ctx, [p], mapped, stats) : requeue(ctx, [p], `facilitator:${out.reason}`, stats)
  }
  const receipt = await chain
    .waitForTransactionReceipt({ hash: out.txHash, timeout: ctx.receiptTimeoutMs, pollingInterval: ctx.receiptPollMs })
    .catch(() => null)
  if (!receipt) return // still `settling`: the sweep's recheck decides from authorizationState
  if (receipt.status === 'success' && usedAuthorizations(p.asset, receipt.logs).has(paymentAuthKey(p))) {
    return settleWith(ctx, [p], out.txHash, stats, { facilitator: client.url })
  }
  await applyDiagnosis(ctx, p, await diagnose(ctx, p), stats)
}

/** A facilitator's refusal the chain could not explain, as one of our failure reasons (or retry). */
function facilitatorReason(reason: string): FailureReason | undefined {
  if (/insufficient/i.test(reason)) return 'insufficient_funds'
  if (/signature/i.test(reason)) return 'invalid_signature'
  if (/valid_before|expired/i.test(reason)) return 'expired'
  return undefined
}

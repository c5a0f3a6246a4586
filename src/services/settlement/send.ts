import { randomUUID } from 'node:crypto'
import { MULTICALL3_ADDRESS } from '../../chain/multicall3-abi.js'
import type { Payment } from '../../db/database.js'
import {
  aggregate3Data,
  authorizationStates,
  paymentAuthKey,
  reasonFromRevert,
  simulateBatch,
  usedAuthorizations,
  walletDeployments,
  type FailureReason,
} from './chain-ops.js'
import type { BatchLifecycle } from './batches.js'
import type { FacilitatorClient } from './facilitator.js'
import type { Reconciler } from './reconcile.js'
import { broadcast, signRelayerTx, type Relayer } from './relayer.js'
import type { SettleStats, SettlerContext } from './settler-context.js'

/**
 * Claim and send: claimed payments that can still settle go into one Multicall3 transaction,
 * simulated first, recorded in Postgres before it is broadcast; or, in facilitator mode, one
 * `/settle` per payment.
 */
export function createSender(ctx: SettlerContext, r: Reconciler, b: BatchLifecycle) {
  const { db, chain, config } = ctx.deps
  const { marginS, feeCap, receiptTimeoutMs, receiptPollMs, hooks, log, getChainId } = ctx
  const { fail, settleWith, requeue, resolveUsed, diagnose, applyDiagnosis } = r
  const { finalizeBatch } = b

  /**
   * Settles claimed payments of one asset in one transaction from `relayer` (lock held). Once
   * `held()` says the lock was lost, no batch is recorded: the claims stay for the relayer's next
   * holder (settler.ts, recoverOrphans), which may already be using its nonces.
   */
  async function sendBatch(
    relayer: Relayer,
    network: string,
    asset: string,
    claimed: Payment[],
    stats: SettleStats,
    held: () => boolean = () => true,
  ) {
    await hooks.afterClaim?.(claimed)
    // an upto payment can only be settled by the relayer its witness names (the facilitator)
    const foreign = claimed.filter((p) => p.scheme === 'upto' && p.facilitator !== relayer.address.toLowerCase())
    if (foreign.length > 0) {
      await requeue(foreign, 'upto_other_facilitator', stats)
      claimed = claimed.filter((p) => !foreign.includes(p))
    }
    const now = BigInt(Math.floor(Date.now() / 1000) + marginS)
    await fail(
      claimed.filter((p) => BigInt(p.valid_before) <= now),
      'expired',
      stats,
    )
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
    // estimated with every transfer required to succeed (chain-ops.ts, aggregate3Data); should one
    // now fail after all (the chain moved since the simulation), the lenient estimate, as before
    const estimate = await chain
      .estimateGas({
        account: relayer.address,
        to: MULTICALL3_ADDRESS,
        data: aggregate3Data(asset, live, deployments, { strict: true }),
      })
      .catch(() => chain.estimateGas({ account: relayer.address, to: MULTICALL3_ADDRESS, data }))
    const fromBlock = await chain.getBlockNumber({ cacheTime: 0 })
    const signed = await signRelayerTx(chain, relayer, {
      to: MULTICALL3_ADDRESS,
      data,
      gas: (estimate * 13n) / 10n,
      chainId: await getChainId(),
      maxFeePerGasCap: feeCap,
    })
    if (!held()) {
      log.warn(
        { relayer: relayer.address, count: live.length },
        'settlement: relayer lock lost before its batch was recorded; its next holder rechecks these claims',
      )
      return
    }
    const batch = { id: randomUUID(), txHash: signed.hash }
    // Recorded before it leaves this process: whatever happens next, a restart can find it.
    await db.transaction().execute(async (trx) => {
      await trx
        .insertInto('settlement_batches')
        .values({
          id: batch.id,
          network,
          asset,
          relayer: relayer.address.toLowerCase(),
          nonce: signed.nonce,
          tx_hash: signed.hash,
          raw_tx: signed.raw,
          from_block: fromBlock,
          size: live.length,
          status: 'pending',
        })
        .execute()
      await trx
        .insertInto('settlement_batch_items')
        .values(live.map((p) => ({ batch_id: batch.id, payment_id: p.id })))
        .execute()
    })
    stats.batches++
    await hooks.beforeSend?.(batch)
    await broadcast(chain, signed.raw)
    await hooks.afterSend?.(batch)
    const receipt = await chain
      .waitForTransactionReceipt({ hash: signed.hash, timeout: receiptTimeoutMs, pollingInterval: receiptPollMs })
      .catch(() => null)
    if (receipt) await finalizeBatch({ id: batch.id, asset }, receipt, stats)
  }

  /**
   * Facilitator mode: one `/settle` per claimed payment, never for an authorization already used
   * on chain. The returned transaction counts only once its receipt shows the AuthorizationUsed
   * log; no answer leaves the payment to authorizationState on the next round.
   */
  async function settleViaFacilitator(
    client: FacilitatorClient,
    claimed: Payment[],
    stats: SettleStats,
    concurrency = 8,
  ) {
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
      const receipt = await chain
        .waitForTransactionReceipt({ hash: out.txHash, timeout: receiptTimeoutMs, pollingInterval: receiptPollMs })
        .catch(() => null)
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

  return { sendBatch, settleViaFacilitator }
}

/** A facilitator's refusal the chain could not explain, as one of our failure reasons (or retry). */
function facilitatorReason(reason: string): FailureReason | undefined {
  if (/insufficient/i.test(reason)) return 'insufficient_funds'
  if (/signature/i.test(reason)) return 'invalid_signature'
  if (/valid_before|expired/i.test(reason)) return 'expired'
  return undefined
}

import { randomUUID } from 'node:crypto'
import type { Address, Hex } from 'viem'
import { MULTICALL3_ADDRESS } from '../../chain/multicall3-abi.js'
import type { Payment } from '../../db/database.js'
import {
  aggregate3Data,
  authorizationStates,
  paymentAuthKey,
  reasonFromRevert,
  settleCall,
  simulateBatch,
  simulateDirect,
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
 * simulated first, recorded in Postgres before it is broadcast (upto payments on a chain whose
 * upto proxy refuses Multicall3: one such transaction each); or, in facilitator mode, one
 * `/settle` per payment.
 */
export function createSender(ctx: SettlerContext, r: Reconciler, b: BatchLifecycle) {
  const { db, chain, config } = ctx.deps
  const {
    marginS,
    feeCap,
    receiptTimeoutMs,
    receiptPollMs,
    hooks,
    log,
    getChainId,
    uptoPath,
    maxTxGas,
    directInFlight,
  } = ctx
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
    // upto payments go in the batch only where the chain's upto proxy takes them through Multicall3
    const path = live.some((p) => p.scheme === 'upto') ? await uptoPath() : 'batch'
    const upto = live.filter((p) => p.scheme === 'upto')
    if (path === 'absent') await requeue(upto, 'upto_proxy_missing', stats)
    const direct = path === 'direct' ? upto : []
    if (path !== 'batch') live = live.filter((p) => p.scheme !== 'upto')

    const settled = (sent: Array<{ id: string; txHash: Hex }>) =>
      Promise.all(
        sent.map(async (b) => {
          const receipt = await chain
            .waitForTransactionReceipt({ hash: b.txHash, timeout: receiptTimeoutMs, pollingInterval: receiptPollMs })
            .catch(() => null)
          if (receipt) await finalizeBatch({ id: b.id, asset }, receipt, stats)
        }),
      )
    const batches = settled(await sendAggregate(relayer, network, asset, live, stats, held))
    // direct transactions `directInFlight` at a time: nodes hold only so many pending per sender
    for (let i = 0; i < direct.length && held(); i += directInFlight) {
      const sent: Array<{ id: string; txHash: Hex }> = []
      for (const p of direct.slice(i, i + directInFlight)) {
        const one = await sendDirect(relayer, network, p, stats, held)
        if (one) sent.push(one)
      }
      await settled(sent)
    }
    await batches
  }

  /**
   * Simulates, records and broadcasts a Multicall3 batch of `live`: one, or several when its gas
   * (with the margin) would pass `maxTxGas`, the chain's per-transaction cap (then halved until each
   * fits). The batches sent; none when nothing was.
   */
  async function sendAggregate(
    relayer: Relayer,
    network: string,
    asset: string,
    live: Payment[],
    stats: SettleStats,
    held: () => boolean,
  ): Promise<Array<{ id: string; txHash: Hex }>> {
    if (live.length === 0) return []
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
    if (live.length === 0) return []
    const data = aggregate3Data(asset, live, deployments)
    // estimated with every transfer required to succeed (chain-ops.ts, aggregate3Data); should one
    // now fail after all (the chain moved since the simulation), the lenient estimate, as before.
    // A node refuses to estimate past its cap: with the simulation passed, that is the size.
    const estimate = await chain
      .estimateGas({
        account: relayer.address,
        to: MULTICALL3_ADDRESS,
        data: aggregate3Data(asset, live, deployments, { strict: true }),
      })
      .catch(() => chain.estimateGas({ account: relayer.address, to: MULTICALL3_ADDRESS, data }))
      .catch((err: unknown) => {
        if (live.length > 1) return null
        throw err
      })
    if (estimate === null || withMargin(estimate) > maxTxGas) {
      if (live.length === 1) throw new Error(`one settlement call needs more gas than the cap (${maxTxGas})`)
      const half = Math.ceil(live.length / 2)
      log.info(
        {
          count: live.length,
          gas: estimate === null ? 'over the node cap' : String(estimate),
          maxTxGas: String(maxTxGas),
        },
        'settlement batch over the per-transaction gas cap: split in two',
      )
      return [
        ...(await sendAggregate(relayer, network, asset, live.slice(0, half), stats, held)),
        ...(await sendAggregate(relayer, network, asset, live.slice(half), stats, held)),
      ]
    }
    const sent = await recordAndBroadcast(
      relayer,
      network,
      asset,
      live,
      { to: MULTICALL3_ADDRESS, data },
      estimate,
      stats,
      held,
    )
    return sent ? [sent] : []
  }

  /**
   * One upto payment in its own transaction to the upto proxy, from its facilitator (the reference
   * proxy public chains run accepts no other caller): simulated, recorded, broadcast. A recorded
   * one-payment batch, so a restart resolves it as any other (batches.ts); null when not sent.
   */
  async function sendDirect(relayer: Relayer, network: string, p: Payment, stats: SettleStats, held: () => boolean) {
    const revert = await simulateDirect(chain, relayer.address, p)
    if (revert !== undefined) {
      const d = await diagnose(p, revert)
      await applyDiagnosis(p, d === 'retry' ? reasonFromRevert(revert) : d, stats)
      return null
    }
    const { target, callData } = settleCall(p)
    const call = { to: target, data: callData }
    const estimate = await chain.estimateGas({ account: relayer.address, ...call })
    return recordAndBroadcast(relayer, network, p.asset, [p], call, estimate, stats, held)
  }

  /**
   * Signs a transaction settling `payments`, records it (batch and items) in Postgres, then
   * broadcasts it: whatever happens after the record, a restart can find it. Once `held()` says
   * the relayer lock was lost, nothing is recorded or sent (null).
   */
  async function recordAndBroadcast(
    relayer: Relayer,
    network: string,
    asset: string,
    payments: Payment[],
    call: { to: Address; data: Hex },
    estimate: bigint,
    stats: SettleStats,
    held: () => boolean,
  ): Promise<{ id: string; txHash: Hex } | null> {
    const fromBlock = await chain.getBlockNumber({ cacheTime: 0 })
    const signed = await signRelayerTx(chain, relayer, {
      ...call,
      gas: withMargin(estimate),
      chainId: await getChainId(),
      maxFeePerGasCap: feeCap,
    })
    if (!held()) {
      log.warn(
        { relayer: relayer.address, count: payments.length },
        'settlement: relayer lock lost before its batch was recorded; its next holder rechecks these claims',
      )
      return null
    }
    const batch = { id: randomUUID(), txHash: signed.hash }
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
          size: payments.length,
          status: 'pending',
        })
        .execute()
      await trx
        .insertInto('settlement_batch_items')
        .values(payments.map((p) => ({ batch_id: batch.id, payment_id: p.id })))
        .execute()
    })
    stats.batches++
    await hooks.beforeSend?.(batch)
    await broadcast(chain, signed.raw)
    await hooks.afterSend?.(batch)
    return batch
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

/** The gas a settlement transaction is sent with: the node's estimate and 30%. */
const withMargin = (estimate: bigint) => (estimate * 13n) / 10n

/** A facilitator's refusal the chain could not explain, as one of our failure reasons (or retry). */
function facilitatorReason(reason: string): FailureReason | undefined {
  if (/insufficient/i.test(reason)) return 'insufficient_funds'
  if (/signature/i.test(reason)) return 'invalid_signature'
  if (/valid_before|expired/i.test(reason)) return 'expired'
  return undefined
}

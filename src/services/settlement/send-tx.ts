import { randomUUID } from 'node:crypto'
import { getAddress, type Address, type Hex } from 'viem'
import { MULTICALL3_ADDRESS } from '../../chain/multicall3-abi.js'
import type { Payment } from '../../db/database.js'
import {
  aggregate3Data,
  reasonFromRevert,
  settleCall,
  simulateBatch,
  simulateDirect,
  walletDeployments,
} from './chain-ops.js'
import { applyDiagnosis, diagnose, requeue } from './reconcile.js'
import { broadcast, signRelayerTx, type Relayer } from '../../chain/relayer.js'
import type { SettleStats, SettlerContext } from './settler-context.js'

/*
 * The settlement transactions of one relayer: a Multicall3 batch (split when over the gas cap), one
 * upto payment's own transaction, an ERC-6492 wallet's deployment; each simulated, recorded in
 * Postgres, then broadcast (recordAndBroadcast).
 */

/** Where the transactions go: the relayer (lock held), the network, the round's stats. */
export interface SendTarget {
  relayer: Relayer
  network: string
  stats: SettleStats
  /** false once the relayer lock was lost: nothing more is recorded or sent */
  held: () => boolean
}

/** A recorded and broadcast settlement transaction. */
export type SentBatch = { id: string; txHash: Hex }

/** The gas a settlement transaction is sent with: the node's estimate and 30%. */
const withMargin = (estimate: bigint) => (estimate * 13n) / 10n

/**
 * Simulates, records and broadcasts a Multicall3 batch of `live`: one, or several when its gas
 * (with the margin) would pass `maxTxGas`, the chain's per-transaction cap (then halved until each
 * fits). The batches sent; none when nothing was.
 */
export async function sendAggregate(
  ctx: SettlerContext,
  to: SendTarget,
  asset: string,
  live: Payment[],
): Promise<SentBatch[]> {
  if (live.length === 0) return []
  // ERC-6492 wallets not deployed yet: the batch deploys each before its transfers
  const deployments = await walletDeployments(ctx.deps.chain, live)
  live = await dropDoomed(ctx, to, asset, live, deployments)
  if (live.length === 0) return []
  const data = aggregate3Data(asset, live, deployments)
  const estimate = await estimateAggregate(ctx, to.relayer, asset, live, deployments, data)
  const { maxTxGas } = ctx
  if (estimate === null || withMargin(estimate) > maxTxGas) {
    if (live.length === 1) throw new Error(`one settlement call needs more gas than the cap (${maxTxGas})`)
    const half = Math.ceil(live.length / 2)
    ctx.log.info(
      {
        count: live.length,
        gas: estimate === null ? 'over the node cap' : String(estimate),
        maxTxGas: String(maxTxGas),
      },
      'settlement batch over the per-transaction gas cap: split in two',
    )
    return [
      ...(await sendAggregate(ctx, to, asset, live.slice(0, half))),
      ...(await sendAggregate(ctx, to, asset, live.slice(half))),
    ]
  }
  const sent = await recordAndBroadcast(ctx, to, asset, live, { to: MULTICALL3_ADDRESS, data }, estimate)
  return sent ? [sent] : []
}

type Deployments = Awaited<ReturnType<typeof walletDeployments>>

/** Simulates the batch; a payment whose call would revert is decided (diagnosed) and left out. */
async function dropDoomed(
  ctx: SettlerContext,
  to: SendTarget,
  asset: string,
  live: Payment[],
  deployments: Deployments,
): Promise<Payment[]> {
  const sim = await simulateBatch(ctx.deps.chain, to.relayer.address, asset, live, deployments)
  const doomed = live.filter((_, i) => sim[i] !== undefined)
  for (const [i, p] of live.entries()) {
    if (sim[i] === undefined) continue
    const d = await diagnose(ctx, p, sim[i])
    await applyDiagnosis(ctx, p, d === 'retry' ? reasonFromRevert(sim[i]!) : d, to.stats)
  }
  return live.filter((p) => !doomed.includes(p))
}

/**
 * The batch's gas: estimated with every transfer required to succeed (chain-ops.ts, aggregate3Data);
 * should one now fail after all (the chain moved since the simulation), the lenient estimate, as
 * before. A node refuses to estimate past its cap: with the simulation passed, that is the size
 * (null; thrown for a single payment).
 */
async function estimateAggregate(
  ctx: SettlerContext,
  relayer: Relayer,
  asset: string,
  live: Payment[],
  deployments: Deployments,
  data: Hex,
): Promise<bigint | null> {
  const { chain } = ctx.deps
  return chain
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
}

/**
 * One payment in its own transaction (upto on the reference proxy public chains run: to the proxy,
 * from its facilitator, the only caller it accepts): simulated, recorded, broadcast. A recorded
 * one-payment batch, so a restart resolves it as any other (batches.ts); null when not sent.
 */
export async function sendDirect(ctx: SettlerContext, to: SendTarget, p: Payment): Promise<SentBatch | null> {
  const { chain } = ctx.deps
  const revert = await simulateDirect(chain, to.relayer.address, p)
  if (revert !== undefined) {
    const d = await diagnose(ctx, p, revert)
    await applyDiagnosis(ctx, p, d === 'retry' ? reasonFromRevert(revert) : d, to.stats)
    return null
  }
  const { target, callData } = settleCall(p)
  const call = { to: target, data: callData }
  const estimate = await chain.estimateGas({ account: to.relayer.address, ...call })
  return recordAndBroadcast(ctx, to, p.asset, [p], call, estimate)
}

/**
 * Direct payments (upto) of ERC-6492 wallets not deployed yet cannot settle (Permit2 asks the
 * wallet, which has no code): per such wallet, one recorded transaction runs its factory call,
 * carrying that wallet's first payment as its item, so the usual lifecycle follows it (replaced
 * when stuck, resolved after a crash); its receipt shows no transfer, so the payment goes back to
 * `served`, as do the wallet's other payments now, and all settle directly next round.
 * Returns the payments held back, and the transactions sent.
 */
export async function deployWalletsFirst(
  ctx: SettlerContext,
  to: SendTarget,
  direct: Payment[],
): Promise<Payment[] & { sent: SentBatch[] }> {
  const out = Object.assign([] as Payment[], { sent: [] as SentBatch[] })
  if (direct.length === 0) return out
  const { chain } = ctx.deps
  const deployments = await walletDeployments(chain, direct)
  for (const [payer, d] of deployments) {
    const mine = direct.filter((p) => p.payer === payer)
    out.push(...mine)
    const call = { to: getAddress(d.factory), data: d.factoryData }
    const estimate = await chain.estimateGas({ account: to.relayer.address, ...call }).catch(() => null)
    if (estimate === null) {
      ctx.log.warn({ payer }, 'settlement: the factory call of an ERC-6492 wallet would fail; its payments wait')
      await requeue(ctx, mine, 'wallet_not_deployable', to.stats)
      continue
    }
    const sent = await recordAndBroadcast(ctx, to, mine[0]!.asset, [mine[0]!], call, estimate)
    if (sent) out.sent.push(sent)
    await requeue(ctx, mine.slice(1), 'wallet_deploying', to.stats)
  }
  return out
}

/**
 * Signs a transaction settling `payments`, records it (batch and items) in Postgres, then
 * broadcasts it: whatever happens after the record, a restart can find it. Once `held()` says
 * the relayer lock was lost, nothing is recorded or sent (null).
 */
async function recordAndBroadcast(
  ctx: SettlerContext,
  to: SendTarget,
  asset: string,
  payments: Payment[],
  call: { to: Address; data: Hex },
  estimate: bigint,
): Promise<SentBatch | null> {
  const { chain, db } = ctx.deps
  const { relayer } = to
  const fromBlock = await chain.getBlockNumber({ cacheTime: 0 })
  const signed = await signRelayerTx(chain, relayer, {
    ...call,
    gas: withMargin(estimate),
    chainId: await ctx.getChainId(),
    maxFeePerGasCap: ctx.feeCap,
  })
  if (!to.held()) {
    ctx.log.warn(
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
        network: to.network,
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
  to.stats.batches++
  await ctx.hooks.beforeSend?.(batch)
  await broadcast(chain, signed.raw)
  await ctx.hooks.afterSend?.(batch)
  return batch
}

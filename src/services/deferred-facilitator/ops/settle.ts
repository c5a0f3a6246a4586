/**
 * POST /deferred/vouchers/:id/:nonce/settle: collects a stored voucher on chain now, through the
 * deferred collector. It spends a relayer's gas, so a voucher id is collected at most once per
 * SETTLE_INTERVAL_MS (a repeat within it is 429; a repeat after a collection with nothing left to
 * pay is answered from the chain without a transaction: idempotent).
 */
import type { Hex } from 'viem'
import { answer, BYTES32, NONCE, type FacilitatorAnswer, type FacilitatorContext } from '../context.js'

/** a voucher id is collected by `settle` at most once in this long (the rest of a repeat is answered from the chain) */
const SETTLE_INTERVAL_MS = 60_000

const fail = (status: number, error: string) => answer(status, { success: false, error })

export async function settleVoucher(ctx: FacilitatorContext, id: string, nonce: string): Promise<FacilitatorAnswer> {
  const { redis, key, config } = ctx.deps
  if (!BYTES32.test(id)) return fail(400, 'Invalid parameters: id must be 32 bytes of 0x hex')
  if (!NONCE.test(nonce)) return fail(400, 'Invalid parameters: nonce must be a non-negative integer')
  // the spec's optional gasPrice / gasLimit are not taken: the relayers price their own transactions
  if (ctx.relayers.length === 0) return fail(503, 'no relayer is configured here')
  const r = await ctx.collector.collectVoucher(id as Hex, BigInt(nonce), async (row) => {
    const settleKey = key('deferred', 'settle', row.escrow, row.buyer, row.seller, row.asset, row.voucher_id)
    return (await redis.set(settleKey, '1', 'PX', SETTLE_INTERVAL_MS, 'NX')) === 'OK'
  })
  if (r.outcome === 'not_found') return fail(400, 'Voucher not found')
  if (r.outcome === 'refused')
    return answer(
      429,
      {
        success: false,
        error: `voucher ${id} was collected less than ${SETTLE_INTERVAL_MS / 1000} s ago; retry later (the platform also collects it on its own)`,
      },
      { 'retry-after': String(Math.ceil(SETTLE_INTERVAL_MS / 1000)) },
    )
  if (r.outcome === 'no_relayer') return fail(503, 'no relayer is free now; retry shortly')
  if (r.outcome !== 'collected')
    return fail(400, `the collect of voucher ${id} reverted or would revert; nothing was collected`)
  return answer(200, {
    success: true,
    transactionHash: r.txHash,
    collectedAmount: r.collectedAmount.toString(),
    network: config.chain.network,
    // not in the spec: what the escrow paid for this voucher id in all (a repeat shows it, with no transaction)
    totalCollected: r.totalCollected.toString(),
  })
}

import type { Address, Hex, PublicClient } from 'viem'
import { broadcast, signRelayerTx, type createRelayerLock, type Relayer } from './relayer.js'

export interface RelayerCallResult {
  hash: Hex
  status: 'success' | 'reverted'
}

/**
 * One contract call from the first free relayer, held under the relayer lock (so its nonces never
 * collide with settlement's), and its receipt: null when no relayer was free. Gas is estimated
 * first, so a call that would revert rejects before anything is sent.
 *
 * @example
 *   const r = await relayerCall({ chain, chainId, maxFeePerGasWei, lock, relayers }, { to: escrow, data })
 */
export async function relayerCall(
  ctx: {
    chain: PublicClient
    chainId: number
    maxFeePerGasWei: bigint
    lock: ReturnType<typeof createRelayerLock>
    relayers: readonly Relayer[]
  },
  call: { to: Address; data: Hex },
  opts: { timeoutMs?: number; onSent?: (hash: Hex) => void } = {},
): Promise<RelayerCallResult | null> {
  for (const relayer of ctx.relayers) {
    const held = await ctx.lock.hold(relayer.address, async () => {
      const gas = await ctx.chain.estimateGas({ account: relayer.address, to: call.to, data: call.data })
      const tx = await signRelayerTx(ctx.chain, relayer, {
        to: call.to,
        data: call.data,
        gas: (gas * 12n) / 10n,
        chainId: ctx.chainId,
        maxFeePerGasCap: ctx.maxFeePerGasWei,
      })
      opts.onSent?.(tx.hash)
      await broadcast(ctx.chain, tx.raw)
      const receipt = await ctx.chain.waitForTransactionReceipt({
        hash: tx.hash,
        timeout: opts.timeoutMs ?? 30_000,
        pollingInterval: 250,
      })
      return { hash: tx.hash, status: receipt.status }
    })
    if (held) return held.value
  }
  return null
}

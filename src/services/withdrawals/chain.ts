// The chain reads a withdrawal needs (USDC balance, capped gas price) and the relayer that sends it.
import { getAddress } from 'viem'
import type { Relayer } from '../../chain/relayer.js'
import { usdcAbi } from '../../chain/usdc-abi.js'
import { appError } from '../../errors.js'
import type { WithdrawalContext } from './context.js'

/** The wallet's USDC balance; 503 when the RPC does not answer. */
export async function readUsdc(ctx: WithdrawalContext, address: string): Promise<bigint> {
  try {
    return await ctx.chain.readContract({
      address: ctx.usdc,
      abi: usdcAbi,
      functionName: 'balanceOf',
      args: [getAddress(address)],
    })
  } catch {
    throw appError('service_unavailable', {
      detail: 'the chain RPC did not answer; cannot check the wallet balance, retry later',
    })
  }
}

/** The node's fee estimate, capped at the settlement's fee cap. */
export async function gasPrice(
  ctx: WithdrawalContext,
): Promise<{ maxFeePerGas: bigint; maxPriorityFeePerGas: bigint }> {
  const fees = await ctx.chain.estimateFeesPerGas()
  const maxFeePerGas = fees.maxFeePerGas > ctx.feeCap ? ctx.feeCap : fees.maxFeePerGas
  return {
    maxFeePerGas,
    maxPriorityFeePerGas: fees.maxPriorityFeePerGas > maxFeePerGas ? maxFeePerGas : fees.maxPriorityFeePerGas,
  }
}

/** Runs fn holding a free relayer's lock (the settlement lock, so nonces never collide); null when all are busy. */
export async function withRelayer<T>(
  ctx: WithdrawalContext,
  fn: (r: Relayer) => Promise<T>,
): Promise<{ value: T } | null> {
  const { relayers, lock } = ctx
  const start = Math.floor(Math.random() * Math.max(1, relayers.length))
  for (let i = 0; i < relayers.length; i++) {
    const r = relayers[(start + i) % relayers.length]!
    const got = await lock.hold(r.address, () => fn(r))
    if (got) return got
  }
  return null
}

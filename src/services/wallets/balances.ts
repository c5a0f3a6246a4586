import type { PublicClient } from 'viem'
import type { Config } from '../../config.js'
import { usdcAbi } from '../../chain/usdc-abi.js'
import { appError } from '../../errors.js'

export interface BalancesView {
  object: 'balance'
  address: string
  /** atomic units (6 decimals) */
  usdc: string
  /** wei */
  eth: string
  block_number: string
}

/** USDC and ETH of an address at one block; 503 when the chain does not answer. */
export async function readBalances(
  deps: { chain: PublicClient; config: Pick<Config, 'chain'> },
  address: `0x${string}`,
): Promise<BalancesView> {
  try {
    // cacheTime 0: viem otherwise reuses a block number up to its polling interval (4 s) old,
    // and a balance read right after funding would show the old amount
    const blockNumber = await deps.chain.getBlockNumber({ cacheTime: 0 })
    const [usdc, eth] = await Promise.all([
      deps.chain.readContract({
        address: deps.config.chain.usdc.address,
        abi: usdcAbi,
        functionName: 'balanceOf',
        args: [address],
        blockNumber,
      }),
      deps.chain.getBalance({ address, blockNumber }),
    ])
    return {
      object: 'balance',
      address,
      usdc: usdc.toString(),
      eth: eth.toString(),
      block_number: blockNumber.toString(),
    }
  } catch {
    throw appError('service_unavailable', {
      detail: 'the chain RPC did not answer; balances are unavailable, retry later',
    })
  }
}

/**
 * Batched contract reads through Multicall3 (the same address on Base, Ethereum and most EVM
 * chains, and on our devnet): one eth_call per batch of aggregate3, each call allowed to fail on
 * its own. A failing batch (node down, no Multicall3 on the chain) is a 502, never a row of nulls.
 */
import type { Abi } from 'viem'
import { HandlerUpstreamError } from '../../src/pool/handler-contract.js'
import { upstreamError, type ChainClient } from './evm-client.js'

/** Multicall3's canonical address (github.com/mds1/multicall3, "Deployments"). */
export const MULTICALL3_ADDRESS = '0xcA11bde05977b3631167028862bE2a173976CA11' as const

const aggregate3Abi = [
  {
    type: 'function',
    name: 'aggregate3',
    stateMutability: 'payable',
    inputs: [
      {
        name: 'calls',
        type: 'tuple[]',
        components: [
          { name: 'target', type: 'address' },
          { name: 'allowFailure', type: 'bool' },
          { name: 'callData', type: 'bytes' },
        ],
      },
    ],
    outputs: [
      {
        name: 'returnData',
        type: 'tuple[]',
        components: [
          { name: 'success', type: 'bool' },
          { name: 'returnData', type: 'bytes' },
        ],
      },
    ],
  },
] as const

export interface ReadCall {
  address: `0x${string}`
  abi: Abi
  functionName: string
  args?: readonly unknown[]
}

/** Each call's decoded result, or null when that call reverted or returned nothing decodable. */
export async function multiRead(
  c: ChainClient,
  calls: ReadCall[],
  blockNumber: bigint,
  what: string,
): Promise<unknown[]> {
  const { viem, client } = c
  const out: unknown[] = []
  // 200 calls per eth_call keeps the request and the answer small for any node
  for (let i = 0; i < calls.length; i += 200) {
    const batch = calls.slice(i, i + 200)
    const encoded = batch.map((x) => ({
      target: x.address,
      allowFailure: true,
      callData: viem.encodeFunctionData({ abi: x.abi, functionName: x.functionName, args: x.args }),
    }))
    let res: readonly { success: boolean; returnData: `0x${string}` }[]
    try {
      res = await client.readContract({
        address: MULTICALL3_ADDRESS,
        abi: aggregate3Abi,
        functionName: 'aggregate3',
        args: [encoded],
        blockNumber,
      })
    } catch (err) {
      if (err instanceof viem.BaseError && err.walk((e) => e instanceof viem.ContractFunctionZeroDataError)) {
        throw new HandlerUpstreamError(
          'upstream_failed',
          `Multicall3 (${MULTICALL3_ADDRESS}) is not deployed on this chain, so ${what} could not be read`,
        )
      }
      throw upstreamError(viem, err, what)
    }
    batch.forEach((x, k) => {
      const r = res[k]
      if (!r?.success || r.returnData === '0x') return void out.push(null)
      try {
        out.push(viem.decodeFunctionResult({ abi: x.abi, functionName: x.functionName, data: r.returnData }))
      } catch {
        out.push(null)
      }
    })
  }
  return out
}

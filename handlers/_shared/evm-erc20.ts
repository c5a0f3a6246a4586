/**
 * The parts of the ERC-20 interface (EIP-20) the on-chain handlers read, and a reader of a
 * token's metadata that reports a missing optional function as null instead of failing.
 */
import { HandlerUpstreamError } from '../../src/pool/handler-contract.js'
import { upstreamError, type ChainClient } from './evm-client.js'

export const erc20Abi = [
  { type: 'function', name: 'name', stateMutability: 'view', inputs: [], outputs: [{ type: 'string' }] },
  { type: 'function', name: 'symbol', stateMutability: 'view', inputs: [], outputs: [{ type: 'string' }] },
  { type: 'function', name: 'decimals', stateMutability: 'view', inputs: [], outputs: [{ type: 'uint8' }] },
  { type: 'function', name: 'totalSupply', stateMutability: 'view', inputs: [], outputs: [{ type: 'uint256' }] },
  {
    type: 'function',
    name: 'balanceOf',
    stateMutability: 'view',
    inputs: [{ name: 'owner', type: 'address' }],
    outputs: [{ type: 'uint256' }],
  },
  {
    type: 'function',
    name: 'transfer',
    stateMutability: 'nonpayable',
    inputs: [
      { name: 'to', type: 'address' },
      { name: 'amount', type: 'uint256' },
    ],
    outputs: [{ type: 'bool' }],
  },
] as const

/** Transfer(address indexed from, address indexed to, uint256 value): ERC-20, and ERC-721 with the id indexed (four topics). */
export const transferEvent = {
  type: 'event',
  name: 'Transfer',
  inputs: [
    { name: 'from', type: 'address', indexed: true },
    { name: 'to', type: 'address', indexed: true },
    { name: 'value', type: 'uint256', indexed: false },
  ],
} as const

export interface TokenInfo {
  name: string | null
  symbol: string | null
  decimals: number | null
  totalSupply: bigint | null
}

/**
 * name, symbol, decimals and totalSupply at `blockNumber`; each one the contract does not answer
 * (reverts, no such function, undecodable) is null. Transport failures still throw (502).
 */
export async function readTokenInfo(c: ChainClient, token: `0x${string}`, blockNumber?: bigint): Promise<TokenInfo> {
  const one = async <T>(functionName: 'name' | 'symbol' | 'decimals' | 'totalSupply'): Promise<T | null> => {
    try {
      return (await c.client.readContract({ address: token, abi: erc20Abi, functionName, blockNumber })) as T
    } catch (err) {
      if (!answeredWithoutValue(c, err)) throw upstreamError(c.viem, err, `${functionName}() of the token`)
      // old tokens (MKR, SAI) return name and symbol as bytes32
      if (functionName === 'name' || functionName === 'symbol')
        return (await bytes32String(c, token, functionName, blockNumber)) as T | null
      return null
    }
  }
  const [name, symbol, decimals, totalSupply] = await Promise.all([
    one<string>('name'),
    one<string>('symbol'),
    one<number>('decimals'),
    one<bigint>('totalSupply'),
  ])
  return { name, symbol, decimals, totalSupply }
}

/**
 * True when the node answered but the contract gave no usable value (it reverted, has no such
 * function, or returned something undecodable); false for transport and node failures.
 */
export function answeredWithoutValue(c: ChainClient, err: unknown): boolean {
  const { viem } = c
  if (!(err instanceof viem.BaseError)) return false
  if (err.walk((x) => x instanceof HandlerUpstreamError)) return false
  const rpc = err.walk((x) => x instanceof viem.RpcRequestError) as {
    cause?: { code?: number; message?: string }
  } | null
  if (rpc) return rpc.cause?.code === 3 || /revert/i.test(rpc.cause?.message ?? '')
  return true
}

async function bytes32String(
  c: ChainClient,
  token: `0x${string}`,
  fn: 'name' | 'symbol',
  blockNumber?: bigint,
): Promise<string | null> {
  const data = c.viem.encodeFunctionData({ abi: erc20Abi, functionName: fn })
  let out: `0x${string}` | undefined
  try {
    out = (await c.client.call({ to: token, data, blockNumber })).data
  } catch (err) {
    if (answeredWithoutValue(c, err)) return null
    throw upstreamError(c.viem, err, `${fn}() of the token`)
  }
  if (!out || out.length !== 66) return null
  const text = c.viem.hexToString(out as `0x${string}`, { size: 32 }).replace(/\0+$/, '')
  return text && /^[\x20-\x7e]+$/.test(text) ? text : null
}

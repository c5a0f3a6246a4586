/**
 * EIP-1559 fee suggestions from eth_feeHistory, shared by gas-price-oracle and evm-gas-estimator
 * so both quote the same numbers for the same block.
 *
 * Method: over the last `blocks` blocks up to the pinned head, the node reports the 10th, 50th
 * and 90th percentile of the priority fee (tip) paid in each block, weighted by gas. The slow,
 * standard and fast tips are the median across the blocks that had transactions of the 10th,
 * 50th and 90th percentile. maxFeePerGas = 2 × the next block's base fee + the tip: the base fee
 * can rise at most 12.5 % per block, so 2× stays valid for about six full blocks in a row.
 */
import type { ChainClient } from './evm-client.js'

export const TIERS = [
  { name: 'slow', percentile: 10 },
  { name: 'standard', percentile: 50 },
  { name: 'fast', percentile: 90 },
] as const
export type TierName = (typeof TIERS)[number]['name']

export const BASE_FEE_MULTIPLIER = 2n

export const FEE_METHOD =
  "eth_feeHistory over the last N blocks with reward percentiles 10/50/90; each tier's maxPriorityFeePerGas is the median, across the blocks that had transactions, of that percentile (slow 10th, standard 50th, fast 90th); " +
  "maxFeePerGas = 2 × the next block's base fee + maxPriorityFeePerGas (the base fee can rise at most 12.5 % per block, so 2× covers about six full blocks); " +
  'expected cost uses the next base fee + the tip, maximum cost uses maxFeePerGas. A window with no transactions gives a tip of 0.'

export interface Gwei {
  wei: string
  gwei: string
}

export interface FeeTier {
  percentile: number
  maxPriorityFeePerGas: bigint
  maxFeePerGas: bigint
  /** next base fee + tip: what a transaction pays per gas if included in the next block */
  expectedFeePerGas: bigint
}

export interface FeeSnapshot {
  chainId: number
  blockNumber: bigint
  blockTimestamp: bigint
  eip1559: boolean
  baseFeePerGas: bigint | null
  nextBaseFeePerGas: bigint | null
  /** eth_gasPrice, the node's legacy suggestion */
  gasPrice: bigint
  tiers: Record<TierName, FeeTier> | null
  window: {
    blocks: number
    oldestBlock: bigint
    newestBlock: bigint
    blocksWithTransactions: number
    averageGasUsedRatio: number | null
  }
}

const median = (xs: bigint[]): bigint => {
  if (xs.length === 0) return 0n
  const s = [...xs].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
  const mid = Math.floor(s.length / 2)
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2n
}

/** Reads fees at the current head: chain id, the head block, eth_gasPrice and eth_feeHistory over `blocks` blocks. */
export async function readFees({ client, read }: ChainClient, blocks: number): Promise<FeeSnapshot> {
  const [chainId, head, gasPrice] = await Promise.all([
    read('the chain id', () => client.getChainId()),
    read('the latest block', () => client.getBlock({ blockTag: 'latest' })),
    read('eth_gasPrice', () => client.getGasPrice()),
  ])
  const blockNumber = head.number
  const eip1559 = head.baseFeePerGas !== null && head.baseFeePerGas !== undefined
  if (!eip1559) {
    return {
      chainId,
      blockNumber,
      blockTimestamp: head.timestamp,
      eip1559,
      baseFeePerGas: null,
      nextBaseFeePerGas: null,
      gasPrice,
      tiers: null,
      window: {
        blocks: 0,
        oldestBlock: blockNumber,
        newestBlock: blockNumber,
        blocksWithTransactions: 0,
        averageGasUsedRatio: null,
      },
    }
  }
  const count = Math.max(1, Math.min(blocks, Number(blockNumber) + 1))
  const history = await read('eth_feeHistory', () =>
    client.getFeeHistory({ blockCount: count, blockNumber, rewardPercentiles: TIERS.map((t) => t.percentile) }),
  )
  const n = history.gasUsedRatio.length
  const base = history.baseFeePerGas
  const nextBaseFeePerGas = base[base.length - 1] ?? head.baseFeePerGas!
  const busy = history.gasUsedRatio.map((r, i) => ({ r, i })).filter(({ r }) => r > 0)
  const tiers = Object.fromEntries(
    TIERS.map((t, k) => {
      const tip = median(busy.map(({ i }) => history.reward?.[i]?.[k] ?? 0n))
      return [
        t.name,
        {
          percentile: t.percentile,
          maxPriorityFeePerGas: tip,
          maxFeePerGas: BASE_FEE_MULTIPLIER * nextBaseFeePerGas + tip,
          expectedFeePerGas: nextBaseFeePerGas + tip,
        },
      ]
    }),
  ) as Record<TierName, FeeTier>
  const avg = n ? history.gasUsedRatio.reduce((a, b) => a + b, 0) / n : null
  return {
    chainId,
    blockNumber,
    blockTimestamp: head.timestamp,
    eip1559,
    baseFeePerGas: head.baseFeePerGas!,
    nextBaseFeePerGas,
    gasPrice,
    tiers,
    window: {
      blocks: n,
      oldestBlock: history.oldestBlock,
      newestBlock: history.oldestBlock + BigInt(Math.max(n - 1, 0)),
      blocksWithTransactions: busy.length,
      averageGasUsedRatio: avg === null ? null : Math.round(avg * 10_000) / 10_000,
    },
  }
}

/** wei and gwei of an amount, as decimal strings. */
export function gwei(formatGwei: (x: bigint) => string, x: bigint): Gwei {
  return { wei: x.toString(), gwei: formatGwei(x) }
}

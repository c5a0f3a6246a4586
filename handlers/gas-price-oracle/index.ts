import { chainClient, CHAIN_DATA_RPC_URL, isoTime } from '../_shared/evm-client.js'
import { FEE_METHOD, gwei, readFees, TIERS } from '../_shared/evm-fees.js'
import { defineHandler } from '../../src/pool/handler-contract.js'

interface Input {
  blocks: number
}

/**
 * Current gas prices of the configured chain (Base in production) from the node's own fee
 * history: base fee now and next, and slow / standard / fast EIP-1559 fees (method in
 * handlers/_shared/evm-fees.ts, repeated in every answer).
 */
export default defineHandler<Input>({
  slug: 'gas-price-oracle',
  description:
    'Current gas prices of the chain from eth_feeHistory: base fee now and for the next block, and slow / standard / fast maxFeePerGas and maxPriorityFeePerGas in gwei and wei.',
  providers: [CHAIN_DATA_RPC_URL],
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      blocks: {
        type: 'integer',
        minimum: 1,
        maximum: 100,
        default: 20,
        description: 'How many recent blocks of fee history to read (1–100, default 20).',
      },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      '{ chainId, blockNumber, blockTime, eip1559, baseFeePerGas {wei, gwei}, nextBaseFeePerGas {wei, gwei}, gasPrice {wei, gwei} (eth_gasPrice), ' +
      'tiers: { slow, standard, fast: { percentile, maxPriorityFeePerGas {wei, gwei}, maxFeePerGas {wei, gwei}, expectedFeePerGas {wei, gwei} } }, ' +
      'window { blocks, oldestBlock, newestBlock, blocksWithTransactions, averageGasUsedRatio }, method }. ' +
      'On a chain without EIP-1559 (no base fee) the base fees and tiers are null and only gasPrice is given.',
    schema: {
      type: 'object',
      properties: {
        chainId: { type: 'integer' },
        blockNumber: { type: 'string' },
        blockTime: { type: 'string' },
        eip1559: { type: 'boolean' },
        baseFeePerGas: { type: ['object', 'null'] },
        nextBaseFeePerGas: { type: ['object', 'null'] },
        gasPrice: { type: 'object' },
        tiers: { type: ['object', 'null'] },
        window: { type: 'object' },
        method: { type: 'string' },
      },
    },
    example: {
      chainId: 84532,
      blockNumber: '26',
      blockTime: '2026-11-28T12:27:20.000Z',
      eip1559: true,
      baseFeePerGas: { wei: '35567964', gwei: '0.035567964' },
      nextBaseFeePerGas: { wei: '31121969', gwei: '0.031121969' },
      gasPrice: { wei: '1031121969', gwei: '1.031121969' },
      tiers: {
        slow: {
          percentile: 10,
          maxPriorityFeePerGas: { wei: '3000000000', gwei: '3' },
          maxFeePerGas: { wei: '3062243938', gwei: '3.062243938' },
          expectedFeePerGas: { wei: '3031121969', gwei: '3.031121969' },
        },
        standard: {
          percentile: 50,
          maxPriorityFeePerGas: { wei: '3500000000', gwei: '3.5' },
          maxFeePerGas: { wei: '3562243938', gwei: '3.562243938' },
          expectedFeePerGas: { wei: '3531121969', gwei: '3.531121969' },
        },
        fast: {
          percentile: 90,
          maxPriorityFeePerGas: { wei: '4000000000', gwei: '4' },
          maxFeePerGas: { wei: '4062243938', gwei: '4.062243938' },
          expectedFeePerGas: { wei: '4031121969', gwei: '4.031121969' },
        },
      },
      window: {
        blocks: 10,
        oldestBlock: '17',
        newestBlock: '26',
        blocksWithTransactions: 2,
        averageGasUsedRatio: 0.0003,
      },
      method:
        "eth_feeHistory over the last N blocks with reward percentiles 10/50/90; each tier's maxPriorityFeePerGas is the median, across the blocks that had transactions, of that percentile (slow 10th, standard…",
    },
  },
  example: { blocks: 20 },
  async run(input, ctx) {
    const c = await chainClient(ctx, { what: 'gas-price-oracle' })
    const fees = await readFees(c, input.blocks ?? 20)
    const g = (x: bigint) => gwei(c.viem.formatGwei, x)
    return {
      body: {
        chainId: fees.chainId,
        blockNumber: fees.blockNumber.toString(),
        blockTime: isoTime(fees.blockTimestamp),
        eip1559: fees.eip1559,
        baseFeePerGas: fees.baseFeePerGas === null ? null : g(fees.baseFeePerGas),
        nextBaseFeePerGas: fees.nextBaseFeePerGas === null ? null : g(fees.nextBaseFeePerGas),
        gasPrice: g(fees.gasPrice),
        tiers: fees.tiers
          ? Object.fromEntries(
              TIERS.map(({ name }) => {
                const t = fees.tiers![name]
                return [
                  name,
                  {
                    percentile: t.percentile,
                    maxPriorityFeePerGas: g(t.maxPriorityFeePerGas),
                    maxFeePerGas: g(t.maxFeePerGas),
                    expectedFeePerGas: g(t.expectedFeePerGas),
                  },
                ]
              }),
            )
          : null,
        window: {
          ...fees.window,
          oldestBlock: fees.window.oldestBlock.toString(),
          newestBlock: fees.window.newestBlock.toString(),
        },
        method: fees.eip1559 ? FEE_METHOD : 'this chain reports no base fee (no EIP-1559): only eth_gasPrice is given',
      },
    }
  },
})

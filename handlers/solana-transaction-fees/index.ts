import { defineHandler, HandlerInputError, HandlerUpstreamError } from '../../src/pool/handler-contract.js'
import { SOLANA_ADDRESS_PATTERN, SOLANA_RPC_SETTING, solanaRpc } from '../_shared/solana-rpc.js'

interface Input {
  accounts?: string[]
  computeUnitLimit?: number
  signatures?: number
}

/** The base fee: 5000 lamports per signature (https://solana.com/docs/core/fees#base-transaction-fee). */
const LAMPORTS_PER_SIGNATURE = 5_000
const LAMPORTS_PER_SOL = 1_000_000_000
/** compute-unit price is in micro-lamports: priority fee = ceil(price × limit / 1 000 000) lamports */
const MICRO_LAMPORTS_PER_LAMPORT = 1_000_000
const PERCENTILES = [25, 50, 75, 90, 95] as const

/** Nearest-rank percentile of an ascending list. */
function percentile(sorted: number[], p: number): number {
  return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)]!
}

/**
 * Solana fee estimate from the RPC's `getRecentPrioritizationFees` (one entry per recent slot, at
 * most 150): percentiles of the prioritization fee (micro-lamports per compute unit), optionally
 * for transactions that write-lock given accounts, plus the documented base fee and the total for
 * a given compute-unit limit.
 * Docs: https://solana.com/docs/rpc/http/getrecentprioritizationfees, https://solana.com/docs/core/fees
 */
export default defineHandler<Input>({
  slug: 'solana-transaction-fees',
  description:
    'Current Solana transaction fees: percentiles of recent priority fees (micro-lamports per compute unit), optionally for the accounts your transaction writes, with the 5000-lamport base fee and a total estimate for your compute-unit limit.',
  providers: [SOLANA_RPC_SETTING],
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      accounts: {
        type: 'array',
        maxItems: 128,
        uniqueItems: true,
        items: { type: 'string', pattern: SOLANA_ADDRESS_PATTERN, description: 'a base58 account address' },
        description:
          'Accounts the transaction write-locks (up to 128, base58): the fees are then those paid by transactions locking all of them; omitted = any transaction.',
      },
      computeUnitLimit: {
        type: 'integer',
        minimum: 1,
        maximum: 1_400_000,
        default: 200_000,
        description:
          'Compute-unit limit of the transaction (SetComputeUnitLimit; 1–1 400 000, default 200 000) for the fee estimate.',
      },
      signatures: {
        type: 'integer',
        minimum: 1,
        maximum: 20,
        default: 1,
        description: 'Signatures on the transaction (base fee is 5000 lamports each).',
      },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      '{ accounts, slotsSampled, slotRange: { from, to }, slotsWithPriorityFee, ' +
      'priorityFeeMicroLamportsPerCu: { min, p25, p50, p75, p90, p95, max, mean } (nearest-rank percentiles over the sampled slots; each slot gives the lowest fee paid by an included transaction), ' +
      'baseFee: { lamportsPerSignature: 5000 (protocol constant), signatures, lamports }, computeUnitLimit, ' +
      'estimates[]: { level (min, p25 … p95, max), computeUnitPriceMicroLamports, priorityFeeLamports (ceil(price × limit / 1e6)), totalLamports, totalSol } }. ' +
      'The figures are statistics of recent slots, not a guarantee of inclusion.',
    schema: {
      type: 'object',
      properties: {
        accounts: { type: 'array', items: { type: 'string' } },
        slotsSampled: { type: 'number' },
        slotRange: {
          type: ['null', 'object'],
          properties: { from: { type: 'number' }, to: { type: 'number' } },
          required: ['from', 'to'],
        },
        slotsWithPriorityFee: { type: 'number' },
        priorityFeeMicroLamportsPerCu: {
          type: ['null', 'object'],
          properties: {
            min: { type: 'number' },
            p25: { type: 'number' },
            p50: { type: 'number' },
            p75: { type: 'number' },
            p90: { type: 'number' },
            p95: { type: 'number' },
            max: { type: 'number' },
            mean: { type: 'number' },
          },
          required: ['min', 'p25', 'p50', 'p75', 'p90', 'p95', 'max', 'mean'],
        },
        baseFee: {
          type: 'object',
          properties: {
            lamportsPerSignature: { type: 'number' },
            signatures: { type: 'number' },
            lamports: { type: 'number' },
          },
          required: ['lamportsPerSignature', 'signatures', 'lamports'],
        },
        computeUnitLimit: { type: 'number' },
        estimates: {
          type: 'array',
          items: {
            type: 'object',
            properties: {
              level: { type: 'string' },
              computeUnitPriceMicroLamports: { type: 'number' },
              priorityFeeLamports: { type: 'number' },
              totalLamports: { type: 'number' },
              totalSol: { type: 'number' },
            },
            required: ['level', 'computeUnitPriceMicroLamports', 'priorityFeeLamports', 'totalLamports', 'totalSol'],
          },
        },
        note: { type: 'string' },
      },
      required: [
        'accounts',
        'slotsSampled',
        'slotRange',
        'slotsWithPriorityFee',
        'priorityFeeMicroLamportsPerCu',
        'baseFee',
        'computeUnitLimit',
        'estimates',
      ],
    },
    example: {
      accounts: [],
      slotsSampled: 10,
      slotRange: { from: 348125, to: 348134 },
      slotsWithPriorityFee: 8,
      priorityFeeMicroLamportsPerCu: {
        min: 0,
        p25: 100,
        p50: 500,
        p75: 5000,
        p90: 10000,
        p95: 50000,
        max: 50000,
        mean: 6780,
      },
      baseFee: { lamportsPerSignature: 5000, signatures: 2, lamports: 10000 },
      computeUnitLimit: 200000,
      estimates: [
        {
          level: 'min',
          computeUnitPriceMicroLamports: 0,
          priorityFeeLamports: 0,
          totalLamports: 10000,
          totalSol: 1e-5,
        },
        {
          level: 'p25',
          computeUnitPriceMicroLamports: 100,
          priorityFeeLamports: 20,
          totalLamports: 10020,
          totalSol: 1.002e-5,
        },
        {
          level: 'p50',
          computeUnitPriceMicroLamports: 500,
          priorityFeeLamports: 100,
          totalLamports: 10100,
          totalSol: 1.01e-5,
        },
      ],
    },
  },
  example: { computeUnitLimit: 200000 },
  async run(input, ctx) {
    const accounts = input.accounts ?? []
    const entries = await solanaRpc<unknown>(
      ctx,
      'getRecentPrioritizationFees',
      accounts.length ? [accounts] : [],
      (e) => {
        // -32602 invalid params: an address the node refused
        if (e.code === -32602) throw new HandlerInputError('accounts', `the RPC refused the accounts: ${e.message}`)
        throw new HandlerUpstreamError(
          'upstream_failed',
          `Solana RPC getRecentPrioritizationFees failed (${e.code}: ${e.message})`,
        )
      },
    )
    if (!Array.isArray(entries))
      throw new HandlerUpstreamError(
        'upstream_failed',
        'Solana RPC answered getRecentPrioritizationFees in an unexpected shape',
      )
    const valid = entries.filter(
      (e): e is { slot: number; prioritizationFee: number } =>
        Number.isInteger(e?.slot) && Number.isFinite(e?.prioritizationFee) && e.prioritizationFee >= 0,
    )
    const limit = input.computeUnitLimit ?? 200_000
    const signatures = input.signatures ?? 1
    const base = LAMPORTS_PER_SIGNATURE * signatures
    const fees = valid.map((e) => e.prioritizationFee).sort((a, b) => a - b)
    const slots = valid.map((e) => e.slot)

    let stats: Record<string, number> | null = null
    const estimates = []
    if (fees.length) {
      stats = {
        min: fees[0]!,
        ...Object.fromEntries(PERCENTILES.map((p) => [`p${p}`, percentile(fees, p)])),
        max: fees[fees.length - 1]!,
        mean: Math.round((fees.reduce((s, x) => s + x, 0) / fees.length) * 100) / 100,
      }
      for (const level of ['min', ...PERCENTILES.map((p) => `p${p}`), 'max']) {
        const price = stats[level]!
        const priority = Math.ceil((price * limit) / MICRO_LAMPORTS_PER_LAMPORT)
        estimates.push({
          level,
          computeUnitPriceMicroLamports: price,
          priorityFeeLamports: priority,
          totalLamports: base + priority,
          totalSol: (base + priority) / LAMPORTS_PER_SOL,
        })
      }
    }
    return {
      body: {
        accounts,
        slotsSampled: valid.length,
        slotRange: slots.length ? { from: Math.min(...slots), to: Math.max(...slots) } : null,
        slotsWithPriorityFee: fees.filter((f) => f > 0).length,
        priorityFeeMicroLamportsPerCu: stats,
        baseFee: { lamportsPerSignature: LAMPORTS_PER_SIGNATURE, signatures, lamports: base },
        computeUnitLimit: limit,
        estimates,
        ...(fees.length
          ? {}
          : { note: 'the RPC returned no recent slots, so no priority-fee statistics; the base fee still applies' }),
      },
    }
  },
})

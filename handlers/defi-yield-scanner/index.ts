import { fetchLlamaPools, MAX_POOLS_BYTES, presentPool, symbolHasToken } from '../_shared/market-defillama.js'
import { defineHandler } from '../../src/pool/handler-contract.js'

interface Input {
  chain?: string
  project?: string
  symbol?: string
  minTvlUsd?: number
  minApy?: number
  maxApy?: number
  stablecoinOnly?: boolean
  noIlRisk?: boolean
  exposure?: 'single' | 'multi'
  includeOutliers?: boolean
  sortBy?: 'apy' | 'tvlUsd' | 'apyBase' | 'apyMean30d'
  limit?: number
}

const SORT_KEYS = ['apy', 'tvlUsd', 'apyBase', 'apyMean30d'] as const

/**
 * Filters and ranks DefiLlama's yield pools (`GET /pools` of the yields API; shape and source in
 * handlers/_shared/market-defillama.ts, https://api-docs.defillama.com/#tag/yields/get/pools).
 * The figures are DefiLlama's as published; nothing is recomputed.
 */
export default defineHandler<Input>({
  slug: 'defi-yield-scanner',
  description:
    'Scan DeFi yield pools tracked by DefiLlama: filter by chain, protocol, token symbol, minimum TVL and APY, stablecoin-only or no impermanent-loss risk, and get the best pools ranked by APY or TVL.',
  providers: ['DEFILLAMA_YIELDS_URL'],
  timeoutMs: 30_000,
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      chain: {
        type: 'string',
        minLength: 1,
        maxLength: 40,
        description: 'Chain as DefiLlama names it (Ethereum, Base, Arbitrum, Solana, ...), case-insensitive.',
      },
      project: {
        type: 'string',
        minLength: 1,
        maxLength: 80,
        pattern: '^[A-Za-z0-9][A-Za-z0-9._-]*$',
        description: 'DefiLlama project slug (aave-v3, uniswap-v3, lido, morpho-blue, ...), case-insensitive.',
      },
      symbol: {
        type: 'string',
        minLength: 1,
        maxLength: 30,
        description:
          'A token the pool holds, matched against the tokens of the pool symbol (USDC matches "USDC" and "USDC-WETH"), case-insensitive.',
      },
      minTvlUsd: {
        type: 'number',
        minimum: 0,
        maximum: 1e12,
        default: 100000,
        description: 'Minimum total value locked in USD; default 100000 (tiny pools often show meaningless APYs).',
      },
      minApy: {
        type: 'number',
        minimum: 0,
        maximum: 1e6,
        description: 'Minimum total APY in percent (e.g. 5 for 5%).',
      },
      maxApy: {
        type: 'number',
        minimum: 0,
        maximum: 1e6,
        description: 'Maximum total APY in percent, to drop implausible values.',
      },
      stablecoinOnly: {
        type: 'boolean',
        default: false,
        description: 'Only pools DefiLlama marks as stablecoin pools.',
      },
      noIlRisk: {
        type: 'boolean',
        default: false,
        description: 'Only pools DefiLlama marks without impermanent-loss risk (ilRisk "no").',
      },
      exposure: {
        type: 'string',
        enum: ['single', 'multi'],
        description: 'single: one-asset deposits (lending, staking, vaults); multi: multi-asset liquidity pools.',
      },
      includeOutliers: {
        type: 'boolean',
        default: false,
        description: 'Keep pools DefiLlama flags as APY outliers (dropped by default).',
      },
      sortBy: {
        type: 'string',
        enum: [...SORT_KEYS],
        default: 'apy',
        description:
          'Rank by apy (total), tvlUsd, apyBase (without reward tokens) or apyMean30d; highest first. Default apy.',
      },
      limit: {
        type: 'integer',
        minimum: 1,
        maximum: 100,
        default: 20,
        description: 'How many pools to return (1–100); default 20.',
      },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      'source ("defillama"), filters (as applied), poolsScanned (all pools DefiLlama returned), matched (pools passing the filters), pools[] ranked: { pool (DefiLlama id), url, chain, project, symbol, poolMeta, tvlUsd, apy, apyBase, apyReward (reward-token APY), apyMean30d, apyChange1d/7d/30d (percentage points), stablecoin, ilRisk, exposure, rewardTokens, underlyingTokens, volumeUsd1d, outlier, prediction (DefiLlama\'s APY trend prediction) }. APYs are percentages; figures DefiLlama does not give are null.',
    schema: {
      type: 'object',
      properties: {
        source: { type: 'string' },
        filters: { type: 'object' },
        poolsScanned: { type: 'integer' },
        matched: { type: 'integer' },
        pools: { type: 'array', items: { type: 'object' } },
      },
    },
    example: {
      source: 'defillama',
      filters: {
        chain: 'Base',
        project: null,
        symbol: 'USDC',
        minTvlUsd: 1000000,
        minApy: null,
        maxApy: null,
        stablecoinOnly: true,
        noIlRisk: false,
        exposure: null,
        includeOutliers: false,
        sortBy: 'apy',
        limit: 10,
      },
      poolsScanned: 9,
      matched: 3,
      pools: [
        {
          pool: 'base-aero-usdc-usdbc',
          url: 'https://defillama.com/yields/pool/base-aero-usdc-usdbc',
          chain: 'Base',
          project: 'aerodrome-v1',
          symbol: 'USDC-USDBC',
          poolMeta: null,
          tvlUsd: 2000000,
          apy: 9.2,
          apyBase: 0.2,
          apyReward: 9,
          apyMean30d: 10,
          apyChange1d: 0,
          apyChange7d: 0,
          apyChange30d: 0,
          stablecoin: true,
          ilRisk: 'no',
          exposure: 'multi',
          rewardTokens: [],
          underlyingTokens: [],
          volumeUsd1d: null,
          outlier: false,
          prediction: { predictedClass: 'Stable/Up', predictedProbability: 70, binnedConfidence: 2 },
        },
        {
          pool: 'base-morpho-usdc',
          url: 'https://defillama.com/yields/pool/base-morpho-usdc',
          chain: 'Base',
          project: 'morpho-blue',
          symbol: 'USDC',
          poolMeta: 'Steakhouse USDC',
          tvlUsd: 40000000,
          apy: 7.7,
          apyBase: 6.2,
          apyReward: 1.5,
          apyMean30d: 7,
          apyChange1d: 0,
          apyChange7d: 0,
          apyChange30d: 0,
          stablecoin: true,
          ilRisk: 'no',
          exposure: 'single',
          rewardTokens: ['0xBAa5CC21fd487B8Fcc2F632f3F4E8D37262a0842'],
          underlyingTokens: [],
          volumeUsd1d: null,
          outlier: false,
          prediction: { predictedClass: 'Stable/Up', predictedProbability: 70, binnedConfidence: 2 },
        },
        {
          pool: 'base-aave-usdc',
          url: 'https://defillama.com/yields/pool/base-aave-usdc',
          chain: 'Base',
          project: 'aave-v3',
          symbol: 'USDC',
          poolMeta: null,
          tvlUsd: 250000000,
          apy: 4.8,
          apyBase: 4.8,
          apyReward: null,
          apyMean30d: 5.1,
          apyChange1d: -0.1,
          apyChange7d: 0.3,
          apyChange30d: -0.5,
          stablecoin: true,
          ilRisk: 'no',
          exposure: 'single',
          rewardTokens: [],
          underlyingTokens: ['0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913'],
          volumeUsd1d: null,
          outlier: false,
          prediction: { predictedClass: 'Stable/Up', predictedProbability: 70, binnedConfidence: 2 },
        },
      ],
      note: "DefiLlama's published figures (APY in percent). The full pool list is read up to 64 MB.",
    },
  },
  example: { chain: 'Base', symbol: 'USDC', minTvlUsd: 1000000, stablecoinOnly: true, limit: 10 },
  async run(input, ctx) {
    const all = await fetchLlamaPools(ctx)
    const filters = {
      chain: input.chain ?? null,
      project: input.project ?? null,
      symbol: input.symbol ?? null,
      minTvlUsd: input.minTvlUsd ?? 100000,
      minApy: input.minApy ?? null,
      maxApy: input.maxApy ?? null,
      stablecoinOnly: input.stablecoinOnly ?? false,
      noIlRisk: input.noIlRisk ?? false,
      exposure: input.exposure ?? null,
      includeOutliers: input.includeOutliers ?? false,
      sortBy: input.sortBy ?? 'apy',
      limit: input.limit ?? 20,
    }
    const matched = all.filter((p) => {
      if (filters.chain && p.chain.toLowerCase() !== filters.chain.trim().toLowerCase()) return false
      if (filters.project && p.project.toLowerCase() !== filters.project.toLowerCase()) return false
      if (filters.symbol && !symbolHasToken(p.symbol, filters.symbol)) return false
      if ((p.tvlUsd ?? 0) < filters.minTvlUsd) return false
      if (filters.minApy !== null && (p.apy === null || p.apy < filters.minApy)) return false
      if (filters.maxApy !== null && (p.apy === null || p.apy > filters.maxApy)) return false
      if (filters.stablecoinOnly && p.stablecoin !== true) return false
      if (filters.noIlRisk && p.ilRisk !== 'no') return false
      if (filters.exposure && p.exposure !== filters.exposure) return false
      if (!filters.includeOutliers && p.outlier === true) return false
      return true
    })
    const key = filters.sortBy
    // pools without the sort figure go last; ties by TVL
    matched.sort((a, b) => (b[key] ?? -Infinity) - (a[key] ?? -Infinity) || (b.tvlUsd ?? 0) - (a.tvlUsd ?? 0))
    return {
      body: {
        source: 'defillama',
        filters,
        poolsScanned: all.length,
        matched: matched.length,
        pools: matched.slice(0, filters.limit).map(presentPool),
        note: `DefiLlama's published figures (APY in percent). The full pool list is read up to ${MAX_POOLS_BYTES / 1024 / 1024} MB.`,
      },
    }
  },
})

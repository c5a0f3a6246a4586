import { fetchLlamaPools, presentPool, symbolHasToken, type LlamaPool } from '../_shared/market-defillama.js'
import { defineHandler } from '../../src/pool/handler-contract.js'

interface Input {
  minTvlUsd?: number
  minApy?: number
  symbol?: string
  stablecoinOnly?: boolean
  limitPerKind?: number
}

/** Reward-token share of the APY above which a pool is called reward-driven. */
const REWARD_SHARE = 0.5
/** Current APY above this multiple of its 30-day mean is called a spike. */
const SPIKE_FACTOR = 2
/** TVL under this is called a small pool. */
const SMALL_TVL_USD = 10_000_000

/**
 * The kinds DefiLlama's pool fields support. The pools list has no protocol category, so single-
 * asset deposits (lending markets, staking, vaults) are told apart only by whether the asset is a
 * stablecoin; multi-asset pools (exposure "multi") are liquidity pools.
 */
const KINDS = [
  {
    kind: 'stablecoin-deposit',
    description: 'single-asset stablecoin deposits (lending markets, savings vaults): exposure single, stablecoin true',
    test: (p: LlamaPool) => p.exposure === 'single' && p.stablecoin === true,
  },
  {
    kind: 'asset-deposit',
    description:
      'single-asset deposits of a volatile asset (lending, staking, vaults): exposure single, stablecoin false',
    test: (p: LlamaPool) => p.exposure === 'single' && p.stablecoin !== true,
  },
  {
    kind: 'stable-liquidity-pool',
    description: 'liquidity pools of stablecoins only: exposure multi, stablecoin true',
    test: (p: LlamaPool) => p.exposure === 'multi' && p.stablecoin === true,
  },
  {
    kind: 'liquidity-pool',
    description: 'liquidity pools with volatile assets: exposure multi, stablecoin false',
    test: (p: LlamaPool) => p.exposure === 'multi' && p.stablecoin !== true,
  },
] as const

const pct = (n: number) => `${Math.round(n * 100) / 100}%`
const usd = (n: number) => `$${Math.round(n).toLocaleString('en-US')}`

/** Risk notes that DefiLlama's own fields support for one pool (nothing is guessed). */
export function riskNotes(p: LlamaPool): string[] {
  const notes: string[] = []
  if (p.ilRisk === 'yes')
    notes.push(
      `impermanent-loss risk (DefiLlama ilRisk "yes")${p.il7d !== null ? `; impermanent loss over the last 7 days: ${pct(p.il7d)}` : ''}`,
    )
  if (p.exposure === 'single' && p.stablecoin !== true) notes.push('price exposure to the deposited asset')
  if (p.apy !== null && p.apy > 0 && p.apyReward !== null && p.apyReward / p.apy > REWARD_SHARE) {
    notes.push(
      `${pct(p.apyReward)} of the ${pct(p.apy)} APY is paid in reward tokens${p.rewardTokens.length ? ` (${p.rewardTokens.join(', ')})` : ''}, whose price and emissions can fall`,
    )
  }
  if (p.apy !== null && p.apyMean30d !== null && p.apyMean30d > 0 && p.apy > SPIKE_FACTOR * p.apyMean30d)
    notes.push(
      `the current APY ${pct(p.apy)} is more than ${SPIKE_FACTOR}× its 30-day mean ${pct(p.apyMean30d)}; it may not last`,
    )
  if (p.apyPct7D !== null && p.apyPct7D < 0 && p.apy !== null && -p.apyPct7D >= Math.max(1, p.apy * 0.25))
    notes.push(`the APY fell ${Math.round(-p.apyPct7D * 100) / 100} percentage points over 7 days`)
  if (p.prediction?.predictedClass && /down/i.test(p.prediction.predictedClass))
    notes.push(
      `DefiLlama's model predicts the APY will fall ("${p.prediction.predictedClass}", probability ${p.prediction.predictedProbability ?? 'n/a'}%)`,
    )
  if (p.tvlUsd !== null && p.tvlUsd < SMALL_TVL_USD)
    notes.push(`a smaller pool (TVL ${usd(p.tvlUsd)}, under ${usd(SMALL_TVL_USD)})`)
  return notes
}

/**
 * Yield opportunities on Base from DefiLlama's yields API (`GET /pools`; shape and source in
 * handlers/_shared/market-defillama.ts, https://api-docs.defillama.com/#tag/yields/get/pools),
 * grouped by the kind the pool fields show and ranked by APY, each with the risk notes the data
 * supports.
 */
export default defineHandler<Input>({
  slug: 'base-defi-opportunities',
  description:
    'DeFi yield opportunities on Base from DefiLlama, grouped into stablecoin deposits, volatile-asset deposits and liquidity pools, ranked by APY, with base vs reward APY and risk notes (impermanent loss, reward dependence, APY spikes, pool size).',
  providers: ['DEFILLAMA_YIELDS_URL'],
  timeoutMs: 30_000,
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      minTvlUsd: {
        type: 'number',
        minimum: 0,
        maximum: 1e12,
        default: 1000000,
        description: 'Minimum total value locked in USD; default 1000000.',
      },
      minApy: { type: 'number', minimum: 0, maximum: 1e6, description: 'Minimum total APY in percent.' },
      symbol: {
        type: 'string',
        minLength: 1,
        maxLength: 30,
        description: 'Only pools holding this token (USDC, WETH, cbBTC, ...), case-insensitive.',
      },
      stablecoinOnly: {
        type: 'boolean',
        default: false,
        description: 'Only pools DefiLlama marks as stablecoin pools.',
      },
      limitPerKind: {
        type: 'integer',
        minimum: 1,
        maximum: 25,
        default: 5,
        description: 'Pools listed per kind (1–25); default 5.',
      },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      'chain ("Base"), source ("defillama"), filters, poolsOnBase (all Base pools DefiLlama lists), considered (after the filters; DefiLlama APY outliers excluded), opportunities[]: { kind (stablecoin-deposit, asset-deposit, stable-liquidity-pool, liquidity-pool), description, count, pools[] ranked by APY: the defi-yield-scanner pool fields plus riskNotes[] }, unclassified (pools DefiLlama gives no exposure for), note. DefiLlama\'s pools list has no protocol category, so lending, staking and vault deposits are not told apart.',
    schema: {
      type: 'object',
      properties: {
        chain: { type: 'string' },
        source: { type: 'string' },
        poolsOnBase: { type: 'integer' },
        considered: { type: 'integer' },
        opportunities: {
          type: 'array',
          items: {
            type: 'object',
            properties: {
              kind: { type: 'string' },
              description: { type: 'string' },
              count: { type: 'integer' },
              pools: { type: 'array' },
            },
          },
        },
        note: { type: 'string' },
      },
    },
    example: {
      chain: 'Base',
      source: 'defillama',
      filters: { minTvlUsd: 1000000, minApy: null, symbol: null, stablecoinOnly: false, limitPerKind: 5 },
      poolsOnBase: 7,
      considered: 5,
      opportunities: [
        {
          kind: 'stablecoin-deposit',
          description:
            'single-asset stablecoin deposits (lending markets, savings vaults): exposure single, stablecoin true',
          count: 2,
          pools: [
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
              riskNotes: [],
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
              riskNotes: [],
            },
          ],
        },
        {
          kind: 'asset-deposit',
          description:
            'single-asset deposits of a volatile asset (lending, staking, vaults): exposure single, stablecoin false',
          count: 1,
          pools: [
            {
              pool: 'base-lido-wsteth',
              url: 'https://defillama.com/yields/pool/base-lido-wsteth',
              chain: 'Base',
              project: 'lido',
              symbol: 'WSTETH',
              poolMeta: null,
              tvlUsd: 90000000,
              apy: 2.9,
              apyBase: 2.9,
              apyReward: null,
              apyMean30d: 3,
              apyChange1d: 0,
              apyChange7d: 0,
              apyChange30d: 0,
              stablecoin: false,
              ilRisk: 'no',
              exposure: 'single',
              rewardTokens: [],
              underlyingTokens: [],
              volumeUsd1d: null,
              outlier: false,
              prediction: { predictedClass: 'Stable/Up', predictedProbability: 70, binnedConfidence: 2 },
              riskNotes: ['price exposure to the deposited asset'],
            },
          ],
        },
        {
          kind: 'stable-liquidity-pool',
          description: 'liquidity pools of stablecoins only: exposure multi, stablecoin true',
          count: 1,
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
              riskNotes: [
                '9% of the 9.2% APY is paid in reward tokens, whose price and emissions can fall',
                'a smaller pool (TVL $2,000,000, under $10,000,000)',
              ],
            },
          ],
        },
      ],
      unclassified: 0,
      note: "DefiLlama's published figures (APY in percent), Base pools only. Kinds follow DefiLlama's exposure and stablecoin fields; its pools list has no protocol category, so lending, staking and vault deposit…",
    },
  },
  example: { minTvlUsd: 1000000, limitPerKind: 5 },
  async run(input, ctx) {
    const filters = {
      minTvlUsd: input.minTvlUsd ?? 1000000,
      minApy: input.minApy ?? null,
      symbol: input.symbol ?? null,
      stablecoinOnly: input.stablecoinOnly ?? false,
      limitPerKind: input.limitPerKind ?? 5,
    }
    const onBase = (await fetchLlamaPools(ctx)).filter((p) => p.chain.toLowerCase() === 'base')
    const considered = onBase.filter(
      (p) =>
        p.outlier !== true &&
        (p.tvlUsd ?? 0) >= filters.minTvlUsd &&
        p.apy !== null &&
        (filters.minApy === null || p.apy >= filters.minApy) &&
        (!filters.symbol || symbolHasToken(p.symbol, filters.symbol)) &&
        (!filters.stablecoinOnly || p.stablecoin === true),
    )
    considered.sort((a, b) => (b.apy ?? 0) - (a.apy ?? 0) || (b.tvlUsd ?? 0) - (a.tvlUsd ?? 0))
    const opportunities = KINDS.map(({ kind, description, test }) => {
      const pools = considered.filter(test)
      return {
        kind,
        description,
        count: pools.length,
        pools: pools.slice(0, filters.limitPerKind).map((p) => ({ ...presentPool(p), riskNotes: riskNotes(p) })),
      }
    })
    const unclassified = considered.filter((p) => !KINDS.some((k) => k.test(p))).length
    return {
      body: {
        chain: 'Base',
        source: 'defillama',
        filters,
        poolsOnBase: onBase.length,
        considered: considered.length,
        opportunities,
        unclassified,
        note:
          "DefiLlama's published figures (APY in percent), Base pools only. Kinds follow DefiLlama's exposure and stablecoin fields; its pools list has no protocol category, so lending, staking and vault deposits are not told apart. " +
          `Risk notes come from the same fields: ilRisk/il7d, reward share of APY (over ${REWARD_SHARE * 100}%), APY above ${SPIKE_FACTOR}× its 30-day mean, 7-day APY drops, DefiLlama's APY prediction, TVL under ${usd(SMALL_TVL_USD)}. Not investment advice.`,
      },
    }
  },
})

import { defineHandler, HandlerInputError } from '../../src/pool/handler-contract.js'
import {
  badShape,
  DEXSCREENER_SETTING,
  dexscreenerJson,
  isPair,
  mapPool,
  type Pool,
} from '../_shared/solana-dexscreener.js'
import { SOLANA_ADDRESS_PATTERN } from '../_shared/solana-rpc.js'

interface Input {
  tokenAddress?: string
  query?: string
  sort?: 'liquidity' | 'volume' | 'newest'
  minLiquidityUsd?: number
  limit?: number
}

const sorters: Record<NonNullable<Input['sort']>, (a: Pool, b: Pool) => number> = {
  liquidity: (a, b) => (b.liquidityUsd ?? -1) - (a.liquidityUsd ?? -1),
  volume: (a, b) => (b.volumeUsd.h24 ?? -1) - (a.volumeUsd.h24 ?? -1),
  newest: (a, b) => (b.createdAt ?? '').localeCompare(a.createdAt ?? ''),
}

/**
 * Solana liquidity pools from DexScreener: every pool of a token (`GET /token-pairs/v1/solana/{address}`)
 * or the Solana pools matching a search (`GET /latest/dex/search?q=`, which searches all chains and
 * answers a limited number of pairs).
 * Reference: https://docs.dexscreener.com/api/reference
 */
export default defineHandler<Input>({
  slug: 'solana-liquidity-pools',
  description:
    'Liquidity pools on Solana DEXes (Raydium, Orca, Meteora, Pump…) for a token address or a search term, from DexScreener: pair address, base/quote token, liquidity, volume, price, FDV and creation time.',
  providers: [DEXSCREENER_SETTING],
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      tokenAddress: {
        type: 'string',
        pattern: SOLANA_ADDRESS_PATTERN,
        description: "A token's mint address (base58): lists every pool DexScreener knows for it. Give this or query.",
      },
      query: {
        type: 'string',
        minLength: 2,
        maxLength: 64,
        description:
          'A search term (symbol, name, or a pair/token address), e.g. "BONK" or "SOL/USDC": Solana pools among DexScreener’s search results. Give this or tokenAddress.',
      },
      sort: {
        type: 'string',
        enum: ['liquidity', 'volume', 'newest'],
        default: 'liquidity',
        description: 'Order: liquidity in USD, 24 h volume in USD, or newest pool first.',
      },
      minLiquidityUsd: {
        type: 'number',
        minimum: 0,
        maximum: 1e12,
        default: 0,
        description:
          'Leave out pools with less liquidity (USD) than this; pools without a liquidity figure are left out when this is above 0.',
      },
      limit: { type: 'integer', minimum: 1, maximum: 100, default: 20, description: 'Pools listed, 1–100.' },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      '{ chain: "solana", source, tokenAddress, query, poolsFound, totalLiquidityUsd (over the pools found), pools[]: { dex, labels, pairAddress, url, baseToken, quoteToken: { address, name, symbol }, priceUsd and priceNative (the price of the pool\'s base token, in USD and in the quote token, as DexScreener gives them), ' +
      'liquidityUsd, liquidityBase, liquidityQuote, volumeUsd: { m5, h1, h6, h24 }, txns24h: { buys, sells }, priceChangePercent: { h1, h24 }, fdvUsd, marketCapUsd, createdAt, ageHours } }. ' +
      'Values DexScreener does not give are null; search results are limited to what DexScreener returns for the term.',
    schema: {
      type: 'object',
      properties: {
        chain: { type: 'string' },
        source: { type: 'string' },
        tokenAddress: { type: ['null', 'string'] },
        query: { type: ['null', 'string'] },
        poolsFound: { type: 'number' },
        totalLiquidityUsd: { type: 'number' },
        pools: {
          type: 'array',
          items: {
            type: 'object',
            properties: {
              dex: { type: 'string' },
              labels: { type: 'array', items: { type: 'string' } },
              pairAddress: { type: 'string' },
              url: { type: 'string' },
              baseToken: {
                type: 'object',
                properties: { address: { type: 'string' }, name: { type: 'string' }, symbol: { type: 'string' } },
                required: ['address', 'name', 'symbol'],
              },
              quoteToken: {
                type: 'object',
                properties: { address: { type: 'string' }, name: { type: 'string' }, symbol: { type: 'string' } },
                required: ['address', 'name', 'symbol'],
              },
              priceUsd: { type: ['null', 'number'] },
              priceNative: { type: 'number' },
              liquidityUsd: { type: ['null', 'number'] },
              liquidityBase: { type: ['number', 'null'] },
              liquidityQuote: { type: ['null', 'number'] },
              volumeUsd: {
                type: 'object',
                properties: {
                  m5: { type: 'number' },
                  h1: { type: 'number' },
                  h6: { type: 'number' },
                  h24: { type: 'number' },
                },
                required: ['m5', 'h1', 'h6', 'h24'],
              },
              txns24h: {
                type: 'object',
                properties: { buys: { type: 'number' }, sells: { type: 'number' } },
                required: ['buys', 'sells'],
              },
              priceChangePercent: {
                type: 'object',
                properties: { h1: { type: 'number' }, h24: { type: 'number' } },
                required: ['h1', 'h24'],
              },
              fdvUsd: { type: 'number' },
              marketCapUsd: { type: 'number' },
              createdAt: { type: ['null', 'string'] },
              ageHours: { type: ['null', 'number'] },
            },
            required: [
              'dex',
              'labels',
              'pairAddress',
              'url',
              'baseToken',
              'quoteToken',
              'priceUsd',
              'priceNative',
              'liquidityUsd',
              'liquidityBase',
              'liquidityQuote',
              'volumeUsd',
              'txns24h',
              'priceChangePercent',
              'fdvUsd',
              'marketCapUsd',
              'createdAt',
              'ageHours',
            ],
          },
        },
      },
      required: ['chain', 'source', 'tokenAddress', 'query', 'poolsFound', 'totalLiquidityUsd', 'pools'],
    },
    example: {
      chain: 'solana',
      source: 'DexScreener',
      tokenAddress: 'DezXAZ8z7PnrnRJjz3wXBoRgixCa6xjnB7YaB1pPB263',
      query: null,
      poolsFound: 3,
      totalLiquidityUsd: 4000000.5,
      pools: [
        {
          dex: 'raydium',
          labels: ['CLMM'],
          pairAddress: 'HVNwzt7Pxfu76KHCMQPTLuTCLTm6WnQ1esLv4eizseSv',
          url: 'https://dexscreener.com/solana/hvnwzt7pxfu76khcmqptlutcltm6wnq1eslv4eizsesv',
          baseToken: { address: 'DezXAZ8z7PnrnRJjz3wXBoRgixCa6xjnB7YaB1pPB263', name: 'Bonk', symbol: 'Bonk' },
          quoteToken: { address: 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v', name: 'USD Coin', symbol: 'USDC' },
          priceUsd: 2.468e-5,
          priceNative: 1.234e-7,
          liquidityUsd: 2500000,
          liquidityBase: 1000000,
          liquidityQuote: 125.5,
          volumeUsd: { m5: 3, h1: 40, h6: 250, h24: 100000 },
          txns24h: { buys: 240, sells: 260 },
          priceChangePercent: { h1: -1.5, h24: 12.25 },
          fdvUsd: 2000000,
          marketCapUsd: 1800000,
          createdAt: '2023-11-14T22:13:20.000Z',
          ageHours: 26630.39,
        },
        {
          dex: 'orca',
          labels: ['CLMM'],
          pairAddress: '5zpyutJu9ee6jFymDGoK7F6S5Kczqtc9FomP3ueKuyA9',
          url: 'https://dexscreener.com/solana/5zpyutju9ee6jfymdgok7f6s5kczqtc9fomp3uekuya9',
          baseToken: { address: 'DezXAZ8z7PnrnRJjz3wXBoRgixCa6xjnB7YaB1pPB263', name: 'Bonk', symbol: 'Bonk' },
          quoteToken: { address: 'So11111111111111111111111111111111111111112', name: 'Wrapped SOL', symbol: 'SOL' },
          priceUsd: 2.468e-5,
          priceNative: 1.234e-7,
          liquidityUsd: 1500000.5,
          liquidityBase: 1000000,
          liquidityQuote: 125.5,
          volumeUsd: { m5: 3, h1: 40, h6: 250, h24: 300000 },
          txns24h: { buys: 240, sells: 260 },
          priceChangePercent: { h1: -1.5, h24: 12.25 },
          fdvUsd: 2000000,
          marketCapUsd: 1800000,
          createdAt: '2023-07-22T04:26:40.000Z',
          ageHours: 29408.17,
        },
        {
          dex: 'meteora',
          labels: ['CLMM'],
          pairAddress: '8sLbNZoA1cfnvMJLPfp98ZLAnFSYCFApfJKMbiXNLwxj',
          url: 'https://dexscreener.com/solana/8slbnzoa1cfnvmjlpfp98zlanfsycfapfjkmbixnlwxj',
          baseToken: { address: 'DezXAZ8z7PnrnRJjz3wXBoRgixCa6xjnB7YaB1pPB263', name: 'Bonk', symbol: 'Bonk' },
          quoteToken: { address: 'So11111111111111111111111111111111111111112', name: 'Wrapped SOL', symbol: 'SOL' },
          priceUsd: null,
          priceNative: 1.234e-7,
          liquidityUsd: null,
          liquidityBase: null,
          liquidityQuote: null,
          volumeUsd: { m5: 3, h1: 40, h6: 250, h24: 900000 },
          txns24h: { buys: 240, sells: 260 },
          priceChangePercent: { h1: -1.5, h24: 12.25 },
          fdvUsd: 2000000,
          marketCapUsd: 1800000,
          createdAt: null,
          ageHours: null,
        },
      ],
    },
  },
  example: { tokenAddress: 'DezXAZ8z7PnrnRJjz3wXBoRgixCa6xjnB7YaB1pPB263' },
  async run(input, ctx) {
    if ((input.tokenAddress === undefined) === (input.query === undefined)) {
      throw new HandlerInputError(
        input.tokenAddress === undefined ? 'tokenAddress' : 'query',
        'give either tokenAddress or query (exactly one)',
      )
    }
    let raw: unknown
    if (input.tokenAddress !== undefined) {
      raw = await dexscreenerJson<unknown>(ctx, `token-pairs/v1/solana/${encodeURIComponent(input.tokenAddress)}`)
      if (!Array.isArray(raw)) throw badShape('token-pairs')
    } else {
      const res = await dexscreenerJson<{ pairs?: unknown }>(ctx, 'latest/dex/search', { q: input.query!.trim() })
      // an empty search answers { pairs: null } as well as []
      raw = res?.pairs ?? []
      if (!Array.isArray(raw)) throw badShape('search')
    }
    const now = Date.now()
    const min = input.minLiquidityUsd ?? 0
    const pools = (raw as unknown[])
      .filter(isPair)
      .filter((p) => p.chainId === 'solana')
      .map((p) => mapPool(p, now))
      .filter((p) => min === 0 || (p.liquidityUsd ?? 0) >= min)
      .sort(sorters[input.sort ?? 'liquidity'])
    const total = pools.reduce((s, p) => s + (p.liquidityUsd ?? 0), 0)
    return {
      body: {
        chain: 'solana',
        source: 'DexScreener',
        tokenAddress: input.tokenAddress ?? null,
        query: input.query ?? null,
        poolsFound: pools.length,
        totalLiquidityUsd: Math.round(total * 100) / 100,
        pools: pools.slice(0, input.limit ?? 20),
      },
    }
  },
})

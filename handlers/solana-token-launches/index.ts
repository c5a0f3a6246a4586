import { defineHandler } from '../../src/pool/handler-contract.js'
import {
  badShape,
  DEXSCREENER_SETTING,
  dexscreenerJson,
  isPair,
  mapPool,
  type Pool,
} from '../_shared/solana-dexscreener.js'

interface Input {
  feed?: 'profiles' | 'boosts'
  maxAgeHours?: number
  minLiquidityUsd?: number
  sort?: 'feed' | 'newestPool' | 'liquidity' | 'volume'
  limit?: number
}

interface FeedEntry {
  url?: string
  chainId?: string
  tokenAddress?: string
  icon?: string
  header?: string
  description?: string
  links?: Array<{ type?: string; label?: string; url?: string }>
  amount?: number
  totalAmount?: number
}

/** /tokens/v1 takes up to 30 addresses per call */
const BATCH = 30

/**
 * Newest Solana tokens on DexScreener: its latest token profiles (`GET /token-profiles/latest/v1`)
 * or latest boosts (`GET /token-boosts/latest/v1`), kept to chainId solana, enriched with their
 * pools from `GET /tokens/v1/solana/{addresses}` (one batch of up to 30). The feed lists tokens
 * that most recently got a profile or boost; the pool creation times say how new each token is.
 * Reference: https://docs.dexscreener.com/api/reference
 */
export default defineHandler<Input>({
  slug: 'solana-token-launches',
  description:
    "Newest Solana token launches from DexScreener's latest token profiles (or boosts), with each token's pools: age of its first pool, liquidity, 24 h volume, price, FDV and the project's links.",
  providers: [DEXSCREENER_SETTING],
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      feed: {
        type: 'string',
        enum: ['profiles', 'boosts'],
        default: 'profiles',
        description:
          'Which DexScreener feed to read: tokens that latest published a profile, or latest bought a boost.',
      },
      maxAgeHours: {
        type: 'number',
        exclusiveMinimum: 0,
        maximum: 8760,
        description:
          'Only tokens whose first pool was created at most this many hours ago (tokens without a known pool time are left out when set).',
      },
      minLiquidityUsd: {
        type: 'number',
        minimum: 0,
        maximum: 1e12,
        default: 0,
        description: 'Only tokens whose pools together hold at least this much liquidity (USD).',
      },
      sort: {
        type: 'string',
        enum: ['feed', 'newestPool', 'liquidity', 'volume'],
        default: 'feed',
        description:
          "Order: as in DexScreener's feed (latest first), youngest first pool, total liquidity, or total 24 h volume.",
      },
      limit: {
        type: 'integer',
        minimum: 1,
        maximum: BATCH,
        default: 20,
        description: `Tokens read from the feed and enriched, 1–${BATCH}.`,
      },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      '{ chain: "solana", feed, source, feedEntriesRead, tokensListed, launches[]: { tokenAddress, name, symbol, profileUrl, icon, description, links[]: { type, label, url }, boost: { amount, totalAmount } (boosts feed) or null, ' +
      "pairsFound, firstPoolCreatedAt, ageHours (of the first pool), totalLiquidityUsd, volume24hUsd, mainPool (the pool with most liquidity: dex, pairAddress, url, quoteToken (the other side), priceUsd (of the token; when it is the pool's quote side, DexScreener's base price ÷ priceNative), liquidityUsd, volumeUsd, fdvUsd, marketCapUsd (null when the token is the quote side: DexScreener gives them for the base token only), createdAt, ageHours) or null when DexScreener lists no pool } }.",
    schema: {
      type: 'object',
      properties: {
        chain: { type: 'string' },
        feed: { type: 'string' },
        source: { type: 'string' },
        feedEntriesRead: { type: 'number' },
        tokensListed: { type: 'number' },
        launches: {
          type: 'array',
          items: {
            type: 'object',
            properties: {
              tokenAddress: { type: 'string' },
              name: { type: ['null', 'string'] },
              symbol: { type: ['null', 'string'] },
              profileUrl: { type: 'string' },
              icon: { type: 'string' },
              description: { type: 'string' },
              links: {
                type: 'array',
                items: {
                  type: 'object',
                  properties: {
                    type: { type: ['null', 'string'] },
                    label: { type: ['null', 'string'] },
                    url: { type: 'string' },
                  },
                  required: ['type', 'label', 'url'],
                },
              },
              boost: {
                type: ['null', 'object'],
                properties: { amount: { type: 'number' }, totalAmount: { type: 'number' } },
                required: ['amount', 'totalAmount'],
              },
              pairsFound: { type: 'number' },
              firstPoolCreatedAt: { type: ['null', 'string'] },
              ageHours: { type: ['null', 'number'] },
              totalLiquidityUsd: { type: 'number' },
              volume24hUsd: { type: 'number' },
              mainPool: {
                type: ['null', 'object'],
                properties: {
                  dex: { type: 'string' },
                  pairAddress: { type: 'string' },
                  url: { type: 'string' },
                  quoteToken: {
                    type: 'object',
                    properties: { address: { type: 'string' }, name: { type: 'string' }, symbol: { type: 'string' } },
                    required: ['address', 'name', 'symbol'],
                  },
                  priceUsd: { type: 'number' },
                  liquidityUsd: { type: 'number' },
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
                  fdvUsd: { type: ['number', 'null'] },
                  marketCapUsd: { type: ['number', 'null'] },
                  createdAt: { type: 'string' },
                  ageHours: { type: 'number' },
                },
                required: [
                  'dex',
                  'pairAddress',
                  'url',
                  'quoteToken',
                  'priceUsd',
                  'liquidityUsd',
                  'volumeUsd',
                  'fdvUsd',
                  'marketCapUsd',
                  'createdAt',
                  'ageHours',
                ],
              },
            },
            required: [
              'tokenAddress',
              'name',
              'symbol',
              'profileUrl',
              'icon',
              'description',
              'links',
              'boost',
              'pairsFound',
              'firstPoolCreatedAt',
              'ageHours',
              'totalLiquidityUsd',
              'volume24hUsd',
              'mainPool',
            ],
          },
        },
      },
      required: ['chain', 'feed', 'source', 'feedEntriesRead', 'tokensListed', 'launches'],
    },
    example: {
      chain: 'solana',
      feed: 'profiles',
      source: 'DexScreener',
      feedEntriesRead: 5,
      tokensListed: 3,
      launches: [
        {
          tokenAddress: '9BB6NFEcjBCtnNLFko2FqVQBq8HHM13kCyYcdQbgpump',
          name: 'Alpha',
          symbol: 'ALPHA',
          profileUrl: 'https://dexscreener.com/solana/9BB6NFEcjBCtnNLFko2FqVQBq8HHM13kCyYcdQbgpump',
          icon: 'https://dd.dexscreener.com/icon.png',
          description: 'about Aaaa',
          links: [
            { type: 'twitter', label: null, url: 'https://x.com/alpha' },
            { type: null, label: 'Website', url: 'https://alpha.example' },
          ],
          boost: null,
          pairsFound: 2,
          firstPoolCreatedAt: '2026-11-28T07:36:47.671Z',
          ageHours: 5,
          totalLiquidityUsd: 100000,
          volume24hUsd: 100000,
          mainPool: {
            dex: 'raydium',
            pairAddress: 'PairA2222222222222222222222222222222222222',
            url: 'https://dexscreener.com/solana/paira2222222222222222222222222222222222222',
            quoteToken: { address: 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v', name: 'USD Coin', symbol: 'USDC' },
            priceUsd: 2.468e-5,
            liquidityUsd: 60000,
            volumeUsd: { m5: 3, h1: 40, h6: 250, h24: 10000 },
            fdvUsd: 2000000,
            marketCapUsd: 1800000,
            createdAt: '2026-11-28T10:36:47.671Z',
            ageHours: 2,
          },
        },
        {
          tokenAddress: 'BbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbPump',
          name: 'Beta',
          symbol: 'BETA',
          profileUrl: 'https://dexscreener.com/solana/bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbpump',
          icon: 'https://dd.dexscreener.com/icon.png',
          description: 'about Bbbb',
          links: [
            { type: 'twitter', label: null, url: 'https://x.com/alpha' },
            { type: null, label: 'Website', url: 'https://alpha.example' },
          ],
          boost: null,
          pairsFound: 1,
          firstPoolCreatedAt: '2026-11-26T12:36:47.671Z',
          ageHours: 48,
          totalLiquidityUsd: 5000,
          volume24hUsd: 200000,
          mainPool: {
            dex: 'meteora',
            pairAddress: 'PairB1111111111111111111111111111111111111',
            url: 'https://dexscreener.com/solana/pairb1111111111111111111111111111111111111',
            quoteToken: { address: 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v', name: 'USD Coin', symbol: 'USDC' },
            priceUsd: 200,
            liquidityUsd: 5000,
            volumeUsd: { m5: 3, h1: 40, h6: 250, h24: 200000 },
            fdvUsd: null,
            marketCapUsd: null,
            createdAt: '2026-11-26T12:36:47.671Z',
            ageHours: 48,
          },
        },
        {
          tokenAddress: 'CcccccccccccccccccccccccccccccccccccccccPump',
          name: null,
          symbol: null,
          profileUrl: 'https://dexscreener.com/solana/ccccccccccccccccccccccccccccccccccccccccpump',
          icon: 'https://dd.dexscreener.com/icon.png',
          description: 'about Cccc',
          links: [
            { type: 'twitter', label: null, url: 'https://x.com/alpha' },
            { type: null, label: 'Website', url: 'https://alpha.example' },
          ],
          boost: null,
          pairsFound: 0,
          firstPoolCreatedAt: null,
          ageHours: null,
          totalLiquidityUsd: 0,
          volume24hUsd: 0,
          mainPool: null,
        },
      ],
    },
  },
  example: { limit: 10 },
  async run(input, ctx) {
    const feed = input.feed ?? 'profiles'
    const raw = await dexscreenerJson<unknown>(
      ctx,
      feed === 'profiles' ? 'token-profiles/latest/v1' : 'token-boosts/latest/v1',
    )
    // the reference documents one object; the live API answers an array of them
    const entries = (Array.isArray(raw) ? raw : raw && typeof raw === 'object' ? [raw] : null) as FeedEntry[] | null
    if (!entries) throw badShape(feed === 'profiles' ? 'token-profiles' : 'token-boosts')
    const seen = new Set<string>()
    const solana = entries.filter(
      (e) =>
        e?.chainId === 'solana' &&
        typeof e.tokenAddress === 'string' &&
        /^[1-9A-HJ-NP-Za-km-z]{32,44}$/.test(e.tokenAddress) &&
        !seen.has(e.tokenAddress) &&
        seen.add(e.tokenAddress),
    )
    const picked = solana.slice(0, input.limit ?? 20)

    const wanted = new Set(picked.map((e) => e.tokenAddress!))
    const poolsByToken = new Map<string, Pool[]>()
    const now = Date.now()
    if (picked.length) {
      const pairs = await dexscreenerJson<unknown>(
        ctx,
        `tokens/v1/solana/${picked.map((e) => e.tokenAddress).join(',')}`,
      )
      if (!Array.isArray(pairs)) throw badShape('tokens')
      for (const p of pairs.filter(isPair)) {
        if (p.chainId !== 'solana') continue
        // a pair belongs to the asked token on either side (a new token is usually the base)
        for (const addr of [p.baseToken.address, p.quoteToken.address]) {
          if (!wanted.has(addr)) continue
          const list = poolsByToken.get(addr) ?? []
          if (!list.some((x) => x.pairAddress === p.pairAddress)) list.push(mapPool(p, now))
          poolsByToken.set(addr, list)
        }
      }
    }

    let launches = picked.map((e) => {
      const pools = poolsByToken.get(e.tokenAddress!) ?? []
      const main = [...pools].sort((a, b) => (b.liquidityUsd ?? -1) - (a.liquidityUsd ?? -1))[0] ?? null
      const times = pools
        .map((p) => p.createdAt)
        .filter((c): c is string => c !== null)
        .sort()
      const first = times[0] ?? null
      const asToken = pools.map((p) => (p.baseToken.address === e.tokenAddress ? p.baseToken : p.quoteToken))[0]
      // DexScreener's priceUsd, fdv and marketCap describe a pair's base token; when the asked token is the
      // quote, its USD price is priceUsd ÷ priceNative (base price in quote units) and the caps are not its own
      const onBase = main !== null && main.baseToken.address === e.tokenAddress
      const tokenPriceUsd =
        main === null
          ? null
          : onBase
            ? main.priceUsd
            : main.priceUsd !== null && main.priceNative
              ? Number((main.priceUsd / main.priceNative).toPrecision(12))
              : null
      return {
        tokenAddress: e.tokenAddress!,
        name: asToken?.name ?? null,
        symbol: asToken?.symbol ?? null,
        profileUrl: e.url ?? null,
        icon: e.icon ?? null,
        description: e.description ?? null,
        links: Array.isArray(e.links)
          ? e.links
              .filter((l) => typeof l?.url === 'string')
              .map((l) => ({ type: l.type ?? null, label: l.label ?? null, url: l.url! }))
          : [],
        boost: feed === 'boosts' ? { amount: e.amount ?? null, totalAmount: e.totalAmount ?? null } : null,
        pairsFound: pools.length,
        firstPoolCreatedAt: first,
        ageHours: first === null ? null : Math.round(((now - Date.parse(first)) / 3_600_000) * 100) / 100,
        totalLiquidityUsd: Math.round(pools.reduce((s, p) => s + (p.liquidityUsd ?? 0), 0) * 100) / 100,
        volume24hUsd: Math.round(pools.reduce((s, p) => s + (p.volumeUsd.h24 ?? 0), 0) * 100) / 100,
        mainPool: main && {
          dex: main.dex,
          pairAddress: main.pairAddress,
          url: main.url,
          quoteToken: main.baseToken.address === e.tokenAddress ? main.quoteToken : main.baseToken,
          priceUsd: tokenPriceUsd,
          liquidityUsd: main.liquidityUsd,
          volumeUsd: main.volumeUsd,
          fdvUsd: onBase ? main.fdvUsd : null,
          marketCapUsd: onBase ? main.marketCapUsd : null,
          createdAt: main.createdAt,
          ageHours: main.ageHours,
        },
      }
    })
    if (input.maxAgeHours !== undefined)
      launches = launches.filter((l) => l.ageHours !== null && l.ageHours <= input.maxAgeHours!)
    if (input.minLiquidityUsd) launches = launches.filter((l) => l.totalLiquidityUsd >= input.minLiquidityUsd!)
    const sort = input.sort ?? 'feed'
    if (sort === 'newestPool') launches.sort((a, b) => (a.ageHours ?? Infinity) - (b.ageHours ?? Infinity))
    else if (sort === 'liquidity') launches.sort((a, b) => b.totalLiquidityUsd - a.totalLiquidityUsd)
    else if (sort === 'volume') launches.sort((a, b) => b.volume24hUsd - a.volume24hUsd)
    return {
      body: {
        chain: 'solana',
        feed,
        source: 'DexScreener',
        feedEntriesRead: entries.length,
        tokensListed: launches.length,
        launches,
      },
    }
  },
})

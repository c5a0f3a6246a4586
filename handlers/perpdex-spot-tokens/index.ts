import { defineHandler } from '../../src/pool/handler-contract.js'
import {
  clean,
  dec,
  HYPERLIQUID_SETTING,
  mul,
  spotMetaAndCtxs,
  type SpotAssetCtx,
  type SpotToken,
} from '../_shared/hyperliquid-info.js'

interface Input {
  token?: string
  sort?: 'volume' | 'marketCap' | 'change'
  limit?: number
  canonicalOnly?: boolean
}

/**
 * Hyperliquid spot markets from the info endpoint's `spotMetaAndAssetCtxs`: the token list, the
 * pairs and one live context per pair (mark/mid price, 24 h volume, circulating supply).
 * Docs: https://hyperliquid.gitbook.io/hyperliquid-docs/for-developers/api/info-endpoint/spot
 */
export default defineHandler<Input>({
  slug: 'perpdex-spot-tokens',
  description:
    'Spot tokens and pairs on Hyperliquid: mark and mid price, 24 h change and volume, circulating and total supply, and token details (full name, token id, EVM contract).',
  providers: [HYPERLIQUID_SETTING],
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      token: {
        type: 'string',
        minLength: 1,
        maxLength: 20,
        pattern: '^[A-Za-z0-9]+$',
        description:
          'Only pairs with this token as base or quote (its Hyperliquid name, e.g. HYPE, PURR); case-insensitive.',
      },
      sort: {
        type: 'string',
        enum: ['volume', 'marketCap', 'change'],
        default: 'volume',
        description:
          'Order: 24 h notional volume, market cap (circulating supply × mark price), or 24 h price change, highest first.',
      },
      limit: { type: 'integer', minimum: 1, maximum: 200, default: 25, description: 'Pairs listed, 1–200.' },
      canonicalOnly: {
        type: 'boolean',
        default: false,
        description: 'Only canonical pairs (the ones Hyperliquid names BASE/QUOTE itself).',
      },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      '{ venue, asOf, tokensTotal, pairsTotal, tokenFound (with token), pairsMatched, pairs[]: { pair (BASE/QUOTE), coin (the name to use with l2Book, e.g. @107), index, isCanonical, base, quote: { name, fullName, index, tokenId, szDecimals, weiDecimals, evmContract }, ' +
      'markPx, midPx, prevDayPx, change24hPercent, dayNotionalVolume and marketCap (in quote-token units, usually USDC; marketCap = circulatingSupply × markPx, computed here), dayBaseVolume, circulatingSupply, totalSupply } }. Values Hyperliquid does not give are null.',
    schema: {
      type: 'object',
      properties: {
        venue: { type: 'string' },
        asOf: { type: 'string' },
        tokensTotal: { type: 'number' },
        pairsTotal: { type: 'number' },
        tokenFound: { type: ['boolean', 'null'] },
        pairsMatched: { type: 'number' },
        pairs: {
          type: 'array',
          items: {
            type: 'object',
            properties: {
              pair: { type: 'string' },
              coin: { type: 'string' },
              index: { type: 'number' },
              isCanonical: { type: 'boolean' },
              base: {
                type: 'object',
                properties: {
                  name: { type: 'string' },
                  fullName: { type: ['null', 'string'] },
                  index: { type: 'number' },
                  tokenId: { type: 'string' },
                  szDecimals: { type: 'number' },
                  weiDecimals: { type: 'number' },
                  evmContract: { type: ['null', 'string'] },
                },
                required: ['name', 'fullName', 'index', 'tokenId', 'szDecimals', 'weiDecimals', 'evmContract'],
              },
              quote: {
                type: 'object',
                properties: {
                  name: { type: 'string' },
                  fullName: { type: ['null', 'string'] },
                  index: { type: 'number' },
                  tokenId: { type: 'string' },
                  szDecimals: { type: 'number' },
                  weiDecimals: { type: 'number' },
                  evmContract: { type: ['null', 'string'] },
                },
                required: ['name', 'fullName', 'index', 'tokenId', 'szDecimals', 'weiDecimals', 'evmContract'],
              },
              markPx: { type: ['null', 'number'] },
              midPx: { type: ['null', 'number'] },
              prevDayPx: { type: ['null', 'number'] },
              change24hPercent: { type: ['null', 'number'] },
              dayNotionalVolume: { type: ['number', 'null'] },
              dayBaseVolume: { type: ['number', 'null'] },
              circulatingSupply: { type: ['number', 'null'] },
              totalSupply: { type: ['number', 'null'] },
              marketCap: { type: ['number', 'null'] },
            },
            required: [
              'pair',
              'coin',
              'index',
              'isCanonical',
              'base',
              'quote',
              'markPx',
              'midPx',
              'prevDayPx',
              'change24hPercent',
              'dayNotionalVolume',
              'dayBaseVolume',
              'circulatingSupply',
              'totalSupply',
              'marketCap',
            ],
          },
        },
      },
      required: ['venue', 'asOf', 'tokensTotal', 'pairsTotal', 'tokenFound', 'pairsMatched', 'pairs'],
    },
    example: {
      venue: 'hyperliquid',
      asOf: '2026-11-28T12:32:54.471Z',
      tokensTotal: 5,
      pairsTotal: 4,
      tokenFound: true,
      pairsMatched: 1,
      pairs: [
        {
          pair: 'HYPE/USDC',
          coin: '@107',
          index: 107,
          isCanonical: false,
          base: {
            name: 'HYPE',
            fullName: 'Hyperliquid',
            index: 150,
            tokenId: '0x0d01dc56dcaaca66ad901c959b4011ec',
            szDecimals: 2,
            weiDecimals: 8,
            evmContract: '0x2222222222222222222222222222222222222222',
          },
          quote: {
            name: 'USDC',
            fullName: null,
            index: 0,
            tokenId: '0x6d1e7cde53ba9467b783cb7c530ce054',
            szDecimals: 8,
            weiDecimals: 8,
            evmContract: null,
          },
          markPx: 40,
          midPx: 40.005,
          prevDayPx: 38,
          change24hPercent: 5.26315789474,
          dayNotionalVolume: 95000000,
          dayBaseVolume: 2400000,
          circulatingSupply: 333000000,
          totalSupply: 999000000,
          marketCap: 13320000000,
        },
      ],
    },
  },
  example: { token: 'HYPE' },
  async run(input, ctx) {
    const { meta, ctxs } = await spotMetaAndCtxs(ctx)
    // tokens and pairs without the documented name are left out rather than crashing the listing
    const named = meta.tokens.filter((t) => typeof t?.name === 'string')
    const tokens = new Map(named.map((t) => [t.index, t]))
    const ctxByCoin = new Map(ctxs.filter((c) => typeof c?.coin === 'string').map((c) => [c.coin!, c]))
    const describe = (t: SpotToken | undefined) =>
      t
        ? {
            name: t.name,
            fullName: t.fullName ?? null,
            index: t.index,
            tokenId: t.tokenId ?? null,
            szDecimals: t.szDecimals ?? null,
            weiDecimals: t.weiDecimals ?? null,
            evmContract: t.evmContract?.address ?? null,
          }
        : null
    const wanted = input.token?.toLowerCase()
    const tokenFound = wanted === undefined ? null : named.some((t) => t.name.toLowerCase() === wanted)

    const pairs = meta.universe
      .map((p, i) => ({ p, i }))
      .filter(({ p }) => typeof p?.name === 'string')
      .map(({ p, i }) => {
        // by coin; by position only when that context names no coin (one naming another pair is not this pair's)
        const positional = ctxs[i]
        const c: SpotAssetCtx =
          ctxByCoin.get(p.name) ??
          (positional && typeof positional === 'object' && typeof positional.coin !== 'string' ? positional : {})
        const base = tokens.get(p.tokens?.[0])
        const quote = tokens.get(p.tokens?.[1])
        const markPx = dec(c.markPx)
        const prev = dec(c.prevDayPx)
        const circulating = dec(c.circulatingSupply)
        return {
          pair: base && quote ? `${base.name}/${quote.name}` : p.name,
          coin: p.name,
          index: p.index,
          isCanonical: p.isCanonical === true,
          base: describe(base),
          quote: describe(quote),
          markPx,
          midPx: dec(c.midPx),
          prevDayPx: prev,
          change24hPercent: markPx !== null && prev ? clean(((markPx - prev) / prev) * 100) : null,
          dayNotionalVolume: dec(c.dayNtlVlm),
          dayBaseVolume: dec(c.dayBaseVlm),
          circulatingSupply: circulating,
          totalSupply: dec(c.totalSupply),
          marketCap: mul(circulating, markPx),
        }
      })
      .filter((p) => !input.canonicalOnly || p.isCanonical)
      .filter(
        (p) => wanted === undefined || p.base?.name.toLowerCase() === wanted || p.quote?.name.toLowerCase() === wanted,
      )
    const key = { volume: 'dayNotionalVolume', marketCap: 'marketCap', change: 'change24hPercent' } as const
    const k = key[input.sort ?? 'volume']
    pairs.sort((a, b) => (b[k] ?? -Infinity) - (a[k] ?? -Infinity))
    return {
      body: {
        venue: 'hyperliquid',
        asOf: new Date().toISOString(),
        tokensTotal: meta.tokens.length,
        pairsTotal: meta.universe.length,
        tokenFound,
        pairsMatched: pairs.length,
        pairs: pairs.slice(0, input.limit ?? 25),
      },
    }
  },
})

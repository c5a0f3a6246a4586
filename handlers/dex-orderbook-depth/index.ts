import { defineHandler, HandlerInputError } from '../../src/pool/handler-contract.js'
import {
  bookTop,
  clean,
  findSpotPair,
  HYPERLIQUID_SETTING,
  l2Book,
  spotMeta,
  type BookLevel,
} from '../_shared/hyperliquid-info.js'

interface Input {
  market: string
  marketType?: 'auto' | 'perp' | 'spot'
  bandsPercent?: number[]
}

const DEFAULT_BANDS = [0.1, 0.5, 1, 2]
/** l2Book sends at most this many levels per side; fewer means the whole side was sent */
const MAX_LEVELS = 20
/** a level exactly on a band edge counts as inside despite binary rounding of the edge */
const EDGE = 1e-12

/**
 * Depth bands of a Hyperliquid order book (perp coin or spot pair) from the info endpoint's
 * `l2Book`: cumulative size and notional within ±x % of the mid, and the bid/ask imbalance.
 * l2Book sends at most 20 levels per side, so a band reaching past the deepest level sent is
 * marked incomplete rather than guessed. Spot pairs are resolved to their book coin through `spotMeta`.
 * Docs: https://hyperliquid.gitbook.io/hyperliquid-docs/for-developers/api/info-endpoint#l2-book-snapshot
 * and .../info-endpoint/spot#retrieve-spot-metadata
 */
export default defineHandler<Input>({
  slug: 'dex-orderbook-depth',
  description:
    'Order-book depth of a Hyperliquid market (perp coin or spot pair): cumulative bid and ask size and notional within ±0.1 %, 0.5 %, 1 % and 2 % of the mid price, and the bid/ask imbalance.',
  providers: [HYPERLIQUID_SETTING],
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    required: ['market'],
    properties: {
      market: {
        type: 'string',
        pattern: '^(@\\d{1,5}|[A-Za-z0-9]{1,20}(/[A-Za-z0-9]{1,20})?)$',
        description: 'A perp coin (BTC, ETH, kPEPE) or a spot pair as BASE/QUOTE (HYPE/USDC) or its book name (@107).',
      },
      marketType: {
        type: 'string',
        enum: ['auto', 'perp', 'spot'],
        default: 'auto',
        description: 'auto: a name with "/" or "@" is spot, else perp.',
      },
      bandsPercent: {
        type: 'array',
        minItems: 1,
        maxItems: 8,
        uniqueItems: true,
        items: { type: 'number', exclusiveMinimum: 0, maximum: 50, description: 'a distance from the mid, in percent' },
        description: 'Band widths in percent of the mid (default [0.1, 0.5, 1, 2]; up to 8, each > 0 and ≤ 50).',
      },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      '{ venue, market, marketType, coin (the book name), pair (spot: BASE/QUOTE), time, bestBid, bestAsk, mid, spread, spreadBps, levelsSent: { bids, asks }, ' +
      'bands[]: { percent, bidFloorPx, askCeilingPx, bidSize, askSize (base units), bidNotional, askNotional (in the quote: USDC for perps, the quote token for spot pairs), imbalance ((bid − ask) / (bid + ask) notional, −1…1, null when both are 0), complete (false when the band reaches past the deepest level Hyperliquid sent, so the figures are a lower bound) } }.',
    schema: {
      type: 'object',
      properties: {
        venue: { type: 'string' },
        market: { type: 'string' },
        marketType: { type: 'string' },
        coin: { type: 'string' },
        pair: { type: ['null', 'string'] },
        time: { type: 'string' },
        bestBid: { type: ['null', 'number'] },
        bestAsk: { type: ['null', 'number'] },
        mid: { type: ['number', 'null'] },
        spread: { type: ['null', 'number'] },
        spreadBps: { type: ['number', 'null'] },
        levelsSent: {
          type: 'object',
          properties: { bids: { type: 'number' }, asks: { type: 'number' } },
          required: ['bids', 'asks'],
        },
        bands: {
          type: 'array',
          items: {
            type: 'object',
            properties: {
              percent: { type: 'number' },
              bidFloorPx: { type: ['null', 'number'] },
              askCeilingPx: { type: ['null', 'number'] },
              bidSize: { type: ['number', 'null'] },
              askSize: { type: ['number', 'null'] },
              bidNotional: { type: ['null', 'number'] },
              askNotional: { type: ['null', 'number'] },
              imbalance: { type: ['null', 'number'] },
              complete: { type: 'boolean' },
            },
            required: [
              'percent',
              'bidFloorPx',
              'askCeilingPx',
              'bidSize',
              'askSize',
              'bidNotional',
              'askNotional',
              'imbalance',
              'complete',
            ],
          },
        },
      },
      required: [
        'venue',
        'market',
        'marketType',
        'coin',
        'pair',
        'time',
        'bestBid',
        'bestAsk',
        'mid',
        'spread',
        'spreadBps',
        'levelsSent',
        'bands',
      ],
    },
    example: {
      venue: 'hyperliquid',
      market: 'BTC',
      marketType: 'perp',
      coin: 'BTC',
      pair: null,
      time: '2025-08-06T03:29:34.231Z',
      bestBid: 99.95,
      bestAsk: 100.05,
      mid: 100,
      spread: 0.1,
      spreadBps: 10,
      levelsSent: { bids: 4, asks: 3 },
      bands: [
        {
          percent: 0.1,
          bidFloorPx: 99.9,
          askCeilingPx: 100.1,
          bidSize: 1,
          askSize: 1,
          bidNotional: 99.95,
          askNotional: 100.05,
          imbalance: -0.0005,
          complete: true,
        },
        {
          percent: 0.5,
          bidFloorPx: 99.5,
          askCeilingPx: 100.5,
          bidSize: 3,
          askSize: 2,
          bidNotional: 299.15,
          askNotional: 200.45,
          imbalance: 0.197558046437,
          complete: true,
        },
        {
          percent: 1,
          bidFloorPx: 99,
          askCeilingPx: 101,
          bidSize: 6,
          askSize: 2,
          bidNotional: 596.15,
          askNotional: 200.45,
          imbalance: 0.496736128546,
          complete: true,
        },
      ],
    },
  },
  example: { market: 'BTC' },
  async run(input, ctx) {
    const spot = input.marketType === 'spot' || (input.marketType !== 'perp' && /[/@]/.test(input.market))
    let coin = input.market
    let pair: string | null = null
    if (spot) {
      const found = findSpotPair(await spotMeta(ctx), input.market)
      if (!found)
        throw new HandlerInputError(
          'market',
          `${input.market} is not a Hyperliquid spot pair (give BASE/QUOTE, e.g. HYPE/USDC, or the book name, e.g. @107)`,
          422,
        )
      coin = found.pair.name
      pair = `${found.base}/${found.quote}`
    } else if (input.market.includes('/') || input.market.startsWith('@')) {
      throw new HandlerInputError(
        'market',
        'a perp market is a coin name such as BTC; BASE/QUOTE and @n name spot pairs',
        400,
      )
    }
    // l2Book answers null for a coin with no market (nktkas/hyperliquid src/api/info/_methods/l2Book.ts L2BookResponse, tests/api/info/l2Book.test.ts "NONE/EXISTENT")
    const book = await l2Book(ctx, coin)
    if (!book)
      throw new HandlerInputError(
        'market',
        `${input.market} has no order book on Hyperliquid (perp names are case-sensitive: BTC, kPEPE)`,
        422,
      )
    const top = bookTop(book)
    const bands = [...(input.bandsPercent ?? DEFAULT_BANDS)]
      .sort((a, b) => a - b)
      .map((percent) => {
        if (top.mid === null)
          return {
            percent,
            bidFloorPx: null,
            askCeilingPx: null,
            bidSize: null,
            askSize: null,
            bidNotional: null,
            askNotional: null,
            imbalance: null,
            complete: false,
          }
        const floor = top.mid * (1 - percent / 100)
        const ceiling = top.mid * (1 + percent / 100)
        const within = (levels: BookLevel[], inside: (px: number) => boolean) => {
          const hit = levels.filter((l) => inside(l.px))
          // complete when a level lies beyond the edge, or the whole side was sent
          const complete = hit.length < levels.length || levels.length < MAX_LEVELS
          return {
            size: clean(hit.reduce((s, l) => s + l.sz, 0))!,
            notional: clean(hit.reduce((s, l) => s + l.px * l.sz, 0))!,
            complete,
          }
        }
        const bid = within(book.bids, (px) => px >= floor * (1 - EDGE))
        const ask = within(book.asks, (px) => px <= ceiling * (1 + EDGE))
        const total = bid.notional + ask.notional
        return {
          percent,
          bidFloorPx: clean(floor),
          askCeilingPx: clean(ceiling),
          bidSize: bid.size,
          askSize: ask.size,
          bidNotional: bid.notional,
          askNotional: ask.notional,
          imbalance: total > 0 ? clean((bid.notional - ask.notional) / total) : null,
          complete: bid.complete && ask.complete,
        }
      })
    return {
      body: {
        venue: 'hyperliquid',
        market: input.market,
        marketType: spot ? 'spot' : 'perp',
        coin: book.coin,
        pair,
        time: book.time === null ? null : new Date(book.time).toISOString(),
        ...top,
        levelsSent: { bids: book.bids.length, asks: book.asks.length },
        bands,
      },
    }
  },
})

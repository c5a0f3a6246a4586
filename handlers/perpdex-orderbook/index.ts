import { defineHandler, HandlerInputError } from '../../src/pool/handler-contract.js'
import {
  bookTop,
  clean,
  HYPERLIQUID_SETTING,
  l2Book,
  PERP_COIN_PATTERN,
  type BookLevel,
} from '../_shared/hyperliquid-info.js'

interface Input {
  coin: string
  nSigFigs?: number
  depth?: number
}

/**
 * Order book of a Hyperliquid perpetual market from the info endpoint's `l2Book` (at most 20
 * levels per side, aggregated to nSigFigs significant figures when asked).
 * Docs: https://hyperliquid.gitbook.io/hyperliquid-docs/for-developers/api/info-endpoint#l2-book-snapshot
 */
export default defineHandler<Input>({
  slug: 'perpdex-orderbook',
  description:
    'Live order book of a Hyperliquid perpetual market: bid and ask levels (price, size, order count), best bid and ask, mid price and spread.',
  providers: [HYPERLIQUID_SETTING],
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    required: ['coin'],
    properties: {
      coin: {
        type: 'string',
        pattern: PERP_COIN_PATTERN,
        description: 'Perp coin as Hyperliquid names it (BTC, ETH, kPEPE, ...); case-sensitive on Hyperliquid.',
      },
      nSigFigs: {
        type: 'integer',
        enum: [2, 3, 4, 5],
        description:
          'Optional: aggregate price levels to this many significant figures (Hyperliquid accepts 2–5); omitted = full precision.',
      },
      depth: {
        type: 'integer',
        minimum: 1,
        maximum: 20,
        default: 20,
        description: 'Levels returned per side, 1–20 (Hyperliquid sends at most 20).',
      },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      '{ venue, coin, time (ISO, the snapshot time Hyperliquid gives), nSigFigs, bestBid, bestAsk, mid ((bestBid + bestAsk) / 2), spread (bestAsk − bestBid), spreadBps (spread / mid × 10 000), ' +
      'bids[] and asks[] best first: { px, sz, n (orders at the level), cumulativeSz }, totals: { bidSz, askSz, bidNotionalUsd, askNotionalUsd } over the returned levels }. Mid and spread are null when a side is empty.',
    schema: {
      type: 'object',
      properties: {
        venue: { type: 'string' },
        coin: { type: 'string' },
        time: { type: 'string' },
        nSigFigs: { type: ['number', 'null'] },
        bestBid: { type: 'number' },
        bestAsk: { type: ['null', 'number'] },
        mid: { type: ['null', 'number'] },
        spread: { type: ['null', 'number'] },
        spreadBps: { type: ['null', 'number'] },
        bids: {
          type: 'array',
          items: {
            type: 'object',
            properties: {
              px: { type: 'number' },
              sz: { type: 'number' },
              n: { type: 'number' },
              cumulativeSz: { type: 'number' },
            },
            required: ['px', 'sz', 'n', 'cumulativeSz'],
          },
        },
        asks: {
          type: 'array',
          items: {
            type: 'object',
            properties: {
              px: { type: 'number' },
              sz: { type: 'number' },
              n: { type: 'number' },
              cumulativeSz: { type: 'number' },
            },
            required: ['px', 'sz', 'n', 'cumulativeSz'],
          },
        },
        totals: {
          type: 'object',
          properties: {
            bidSz: { type: 'number' },
            askSz: { type: 'number' },
            bidNotionalUsd: { type: 'number' },
            askNotionalUsd: { type: 'number' },
          },
          required: ['bidSz', 'askSz', 'bidNotionalUsd', 'askNotionalUsd'],
        },
      },
      required: [
        'venue',
        'coin',
        'time',
        'nSigFigs',
        'bestBid',
        'bestAsk',
        'mid',
        'spread',
        'spreadBps',
        'bids',
        'asks',
        'totals',
      ],
    },
    example: {
      venue: 'hyperliquid',
      coin: 'ETH',
      time: '2025-08-06T03:29:34.231Z',
      nSigFigs: 5,
      bestBid: 100,
      bestAsk: 100.5,
      mid: 100.25,
      spread: 0.5,
      spreadBps: 49.8753117207,
      bids: [
        { px: 100, sz: 2, n: 3, cumulativeSz: 2 },
        { px: 99.5, sz: 1, n: 1, cumulativeSz: 3 },
        { px: 99, sz: 4, n: 2, cumulativeSz: 7 },
      ],
      asks: [
        { px: 100.5, sz: 1.5, n: 2, cumulativeSz: 1.5 },
        { px: 101, sz: 3, n: 1, cumulativeSz: 4.5 },
      ],
      totals: { bidSz: 7, askSz: 4.5, bidNotionalUsd: 695.5, askNotionalUsd: 453.75 },
    },
  },
  example: { coin: 'BTC', depth: 10 },
  async run(input, ctx) {
    // l2Book answers null for a coin with no market (nktkas/hyperliquid src/api/info/_methods/l2Book.ts L2BookResponse, tests/api/info/l2Book.test.ts "NONE/EXISTENT")
    const book = await l2Book(ctx, input.coin, input.nSigFigs)
    if (!book)
      throw new HandlerInputError(
        'coin',
        `${input.coin} has no order book on Hyperliquid (coin names are case-sensitive: BTC, kPEPE)`,
        422,
      )
    const depth = input.depth ?? 20
    const withCumulative = (levels: BookLevel[]) => {
      let cum = 0
      return levels.slice(0, depth).map((l) => {
        cum += l.sz
        return { px: l.px, sz: l.sz, n: l.n, cumulativeSz: clean(cum) }
      })
    }
    const bids = withCumulative(book.bids)
    const asks = withCumulative(book.asks)
    const sum = (xs: number[]) => clean(xs.reduce((s, x) => s + x, 0))
    return {
      body: {
        venue: 'hyperliquid',
        coin: book.coin,
        time: book.time === null ? null : new Date(book.time).toISOString(),
        nSigFigs: input.nSigFigs ?? null,
        ...bookTop(book),
        bids,
        asks,
        totals: {
          bidSz: sum(bids.map((l) => l.sz)),
          askSz: sum(asks.map((l) => l.sz)),
          bidNotionalUsd: sum(bids.map((l) => l.px * l.sz)),
          askNotionalUsd: sum(asks.map((l) => l.px * l.sz)),
        },
      },
    }
  },
})

import { defineHandler, HandlerUpstreamError } from '../../src/pool/handler-contract.js'
import {
  crossVenueFunding,
  DYDX_SETTING,
  venueStatus,
  type VenueFunding,
} from '../_shared/hyperliquid-cross-venue-funding.js'
import { annualize, clean, HOURS_PER_YEAR, HYPERLIQUID_SETTING, mul } from '../_shared/hyperliquid-info.js'

interface Input {
  coins?: string[]
  minSpreadAnnualizedPercent?: number
  limit?: number
}

/**
 * Funding-rate spreads between Hyperliquid and dYdX v4 for coins listed on both: short the perp
 * where funding is higher, long it where it is lower, and collect the difference while it lasts.
 * Gross figures only: trading fees, slippage, the price gap between venues and rate changes are
 * not included. Both venues are needed; if either fails the answer is a 502.
 * Sources: https://hyperliquid.gitbook.io/hyperliquid-docs/for-developers/api/info-endpoint/perpetuals,
 * https://docs.dydx.xyz/indexer-client/http (GET /v4/perpetualMarkets).
 * dYdX's nextFundingRate is hourly: the indexer converts each premium sample from the protocol's 8-hour ppm with
 * funding8HourValuePpmTo1HourRate, averages them and adds the market's default 1-hour rate
 * (dydxprotocol/v4-chain indexer/services/ender/src/handlers/funding-handler.ts, indexer/packages/postgres/src/lib/protocol-translations.ts,
 * indexer/packages/redis/src/caches/next-funding-cache.ts, indexer/services/roundtable/src/tasks/market-updater.ts), so it is not divided by 8 here.
 */
export default defineHandler<Input>({
  slug: 'funding-rate-arb-scanner',
  description:
    'Scans perpetual funding rates on Hyperliquid and dYdX for coins listed on both and ranks the annualized funding spread, saying which venue to long and which to short; gross of fees and slippage.',
  providers: [HYPERLIQUID_SETTING, DYDX_SETTING],
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      coins: {
        type: 'array',
        minItems: 1,
        maxItems: 50,
        uniqueItems: true,
        items: { type: 'string', pattern: '^[A-Za-z0-9]{1,20}$', description: 'a base asset symbol' },
        description: 'Only these base assets (1–50, case-insensitive); omitted = every coin listed on both venues.',
      },
      minSpreadAnnualizedPercent: {
        type: 'number',
        minimum: 0,
        maximum: 100000,
        default: 0,
        description: 'Leave out spreads below this annualized percentage (e.g. 10 = 10 % a year).',
      },
      limit: { type: 'integer', minimum: 1, maximum: 200, default: 25, description: 'Opportunities listed, 1–200.' },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      `{ asOf, venues[]: { venue, status, markets }, coinsOnBothVenues, annualization ("hourly × ${HOURS_PER_YEAR}", simple), notIncluded (fees, slippage, ...), ` +
      'opportunities[] widest spread first: { coin, longVenue, longMarket, longRateHourly, shortVenue, shortMarket, shortRateHourly, spreadHourly (short rate − long rate), spreadAnnualized, spreadAnnualizedPercent, ' +
      'prices: { hyperliquidMarkPx (per base unit: the kPEPE price ÷ 1000), dydxOraclePx, gapPercent } } }. Long where funding is lower, short where it is higher: a positive rate is paid by longs to shorts on both venues.',
    schema: {
      type: 'object',
      properties: {
        asOf: { type: 'string' },
        venues: {
          type: 'array',
          items: {
            type: 'object',
            properties: { venue: { type: 'string' }, status: { type: 'string' }, markets: { type: 'number' } },
            required: ['venue', 'status', 'markets'],
          },
        },
        coinsOnBothVenues: { type: 'number' },
        annualization: { type: 'string' },
        notIncluded: { type: 'string' },
        opportunitiesFound: { type: 'number' },
        opportunities: {
          type: 'array',
          items: {
            type: 'object',
            properties: {
              coin: { type: 'string' },
              longVenue: { type: 'string' },
              longMarket: { type: 'string' },
              longRateHourly: { type: 'number' },
              shortVenue: { type: 'string' },
              shortMarket: { type: 'string' },
              shortRateHourly: { type: 'number' },
              spreadHourly: { type: 'number' },
              spreadAnnualized: { type: 'number' },
              spreadAnnualizedPercent: { type: 'number' },
              prices: {
                type: 'object',
                properties: {
                  hyperliquidMarkPx: { type: 'number' },
                  dydxOraclePx: { type: 'number' },
                  gapPercent: { type: 'number' },
                },
                required: ['hyperliquidMarkPx', 'dydxOraclePx', 'gapPercent'],
              },
            },
            required: [
              'coin',
              'longVenue',
              'longMarket',
              'longRateHourly',
              'shortVenue',
              'shortMarket',
              'shortRateHourly',
              'spreadHourly',
              'spreadAnnualized',
              'spreadAnnualizedPercent',
              'prices',
            ],
          },
        },
      },
      required: [
        'asOf',
        'venues',
        'coinsOnBothVenues',
        'annualization',
        'notIncluded',
        'opportunitiesFound',
        'opportunities',
      ],
    },
    example: {
      asOf: '2026-11-28T12:27:00.822Z',
      venues: [
        { venue: 'hyperliquid', status: 'ok', markets: 3 },
        { venue: 'dydx', status: 'ok', markets: 4 },
      ],
      coinsOnBothVenues: 3,
      annualization: 'hourly rate × 8760 (24 × 365), simple',
      notIncluded:
        'trading fees, slippage, the price gap between venues, margin costs and future rate changes; dYdX gives its predicted next hourly rate, Hyperliquid its current one',
      opportunitiesFound: 3,
      opportunities: [
        {
          coin: 'PEPE',
          longVenue: 'dydx',
          longMarket: 'PEPE-USD',
          longRateHourly: -5e-5,
          shortVenue: 'hyperliquid',
          shortMarket: 'kPEPE',
          shortRateHourly: 0.0001,
          spreadHourly: 0.00015,
          spreadAnnualized: 1.314,
          spreadAnnualizedPercent: 131.4,
          prices: { hyperliquidMarkPx: 1.26e-5, dydxOraclePx: 1.26e-5, gapPercent: 0 },
        },
        {
          coin: 'ETH',
          longVenue: 'hyperliquid',
          longMarket: 'ETH',
          longRateHourly: -2e-5,
          shortVenue: 'dydx',
          shortMarket: 'ETH-USD',
          shortRateHourly: 2e-5,
          spreadHourly: 4e-5,
          spreadAnnualized: 0.3504,
          spreadAnnualizedPercent: 35.04,
          prices: { hyperliquidMarkPx: 3999, dydxOraclePx: 4001, gapPercent: -0.0499875031242 },
        },
        {
          coin: 'BTC',
          longVenue: 'dydx',
          longMarket: 'BTC-USD',
          longRateHourly: 1e-5,
          shortVenue: 'hyperliquid',
          shortMarket: 'BTC',
          shortRateHourly: 1.25e-5,
          spreadHourly: 2.5e-6,
          spreadAnnualized: 0.0219,
          spreadAnnualizedPercent: 2.19,
          prices: { hyperliquidMarkPx: 100010, dydxOraclePx: 100020.5, gapPercent: -0.0104978479412 },
        },
      ],
    },
  },
  example: { minSpreadAnnualizedPercent: 5 },
  async run(input, ctx) {
    const results = await crossVenueFunding(ctx)
    const failed = results.filter((r) => r.status === 'failed')
    if (failed.length)
      throw new HandlerUpstreamError(
        'upstream_failed',
        `the scan needs both venues: ${failed.map((f) => `${f.venue}: ${f.error}`).join('; ')}`,
      )
    const index = (list: VenueFunding[]) => {
      const m = new Map<string, VenueFunding>()
      for (const x of list) if (!m.has(x.base)) m.set(x.base, x)
      return m
    }
    const hl = index(results.find((r) => r.venue === 'hyperliquid')!.markets)
    const dydx = index(results.find((r) => r.venue === 'dydx')!.markets)
    const wanted = input.coins ? new Set(input.coins.map((c) => c.toUpperCase())) : null
    const both = [...hl.keys()].filter((c) => dydx.has(c))
    const min = input.minSpreadAnnualizedPercent ?? 0

    const opportunities = both
      .filter((c) => !wanted || wanted.has(c))
      .map((coin) => {
        const a = hl.get(coin)!
        const b = dydx.get(coin)!
        const [long, short] = a.fundingRateHourly <= b.fundingRateHourly ? [a, b] : [b, a]
        const spreadHourly = clean(short.fundingRateHourly - long.fundingRateHourly)!
        const hlPx = a.markPx === null ? null : a.markPx / a.baseUnits
        const gap = hlPx !== null && b.oraclePx ? clean(((hlPx - b.oraclePx) / b.oraclePx) * 100) : null
        return {
          coin,
          longVenue: long.venue,
          longMarket: long.market,
          longRateHourly: long.fundingRateHourly,
          shortVenue: short.venue,
          shortMarket: short.market,
          shortRateHourly: short.fundingRateHourly,
          spreadHourly,
          spreadAnnualized: annualize(spreadHourly),
          spreadAnnualizedPercent: mul(annualize(spreadHourly), 100),
          prices: { hyperliquidMarkPx: clean(hlPx), dydxOraclePx: b.oraclePx, gapPercent: gap },
        }
      })
      .filter((o) => (o.spreadAnnualizedPercent ?? 0) >= min)
      .sort((x, y) => y.spreadHourly - x.spreadHourly)
    return {
      body: {
        asOf: new Date().toISOString(),
        venues: venueStatus(results),
        coinsOnBothVenues: both.length,
        annualization: `hourly rate × ${HOURS_PER_YEAR} (24 × 365), simple`,
        notIncluded:
          'trading fees, slippage, the price gap between venues, margin costs and future rate changes; dYdX gives its predicted next hourly rate, Hyperliquid its current one',
        opportunitiesFound: opportunities.length,
        opportunities: opportunities.slice(0, input.limit ?? 25),
      },
    }
  },
})

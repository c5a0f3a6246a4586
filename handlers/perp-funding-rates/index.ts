import { defineHandler } from '../../src/pool/handler-contract.js'
import {
  crossVenueFunding,
  DYDX_SETTING,
  VENUES,
  venueStatus,
  type Venue,
  type VenueFunding,
} from '../_shared/hyperliquid-cross-venue-funding.js'
import { HOURS_PER_YEAR, HYPERLIQUID_SETTING } from '../_shared/hyperliquid-info.js'

interface Input {
  coins?: string[]
  sort?: 'highest' | 'lowest' | 'coin'
  limit?: number
}

type Row = { coin: string } & Record<Venue, Omit<VenueFunding, 'venue' | 'base'> | null>

/**
 * Current perpetual funding across venues (Hyperliquid and dYdX v4), normalized to hourly and
 * annualized rates, matched by base asset. A venue that fails is reported in `venues` and the
 * answer is partial; when every venue fails it is a 502.
 * Sources: https://hyperliquid.gitbook.io/hyperliquid-docs/for-developers/api/info-endpoint/perpetuals,
 * https://docs.dydx.xyz/indexer-client/http (GET /v4/perpetualMarkets).
 * dYdX's nextFundingRate is hourly: the indexer converts each premium sample from the protocol's 8-hour ppm with
 * funding8HourValuePpmTo1HourRate, averages them and adds the market's default 1-hour rate
 * (dydxprotocol/v4-chain indexer/services/ender/src/handlers/funding-handler.ts, indexer/packages/postgres/src/lib/protocol-translations.ts,
 * indexer/packages/redis/src/caches/next-funding-cache.ts, indexer/services/roundtable/src/tasks/market-updater.ts), so it is not divided by 8 here.
 */
export default defineHandler<Input>({
  slug: 'perp-funding-rates',
  description:
    'Current perpetual funding rates across venues (Hyperliquid and dYdX), per coin, normalized to hourly and annualized rates, with each venue’s status.',
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
        description:
          'Only these base assets (e.g. ["BTC","ETH"]; 1–50, case-insensitive); omitted = every coin listed on any venue.',
      },
      sort: {
        type: 'string',
        enum: ['highest', 'lowest', 'coin'],
        default: 'highest',
        description: 'Order: highest annualized rate on any venue first, lowest first, or by coin name.',
      },
      limit: { type: 'integer', minimum: 1, maximum: 500, default: 50, description: 'Coins listed, 1–500.' },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      `{ asOf, annualization ("hourly × ${HOURS_PER_YEAR}", simple), venues[]: { venue, status ok|failed, markets, error }, partial (true when a venue failed), coinsMatched, notFound[] (asked coins no venue lists), ` +
      'coins[]: { coin, hyperliquid, dydx: null when the venue does not list it (or failed), else { market, fundingRateHourly, fundingRateAnnualized, fundingAnnualizedPercent, baseUnits (1000 for Hyperliquid k-markets, whose prices are per 1000 units), markPx (Hyperliquid), oraclePx, openInterestUsd, dayVolumeUsd } } }. ' +
      "Rates are fractions (0.0001 = 0.01 %); positive = longs pay shorts. dYdX's is its predicted next hourly rate; Hyperliquid k-markets (kPEPE = 1000 PEPE) are matched to the base asset.",
    schema: {
      type: 'object',
      properties: {
        asOf: { type: 'string' },
        annualization: { type: 'string' },
        venues: {
          type: 'array',
          items: {
            type: 'object',
            properties: {
              venue: { type: 'string' },
              status: { type: 'string' },
              markets: { type: 'number' },
              error: { type: 'string' },
            },
            required: ['venue', 'status', 'markets'],
          },
        },
        partial: { type: 'boolean' },
        coinsMatched: { type: 'number' },
        notFound: { type: 'array', items: { type: 'string' } },
        coins: {
          type: 'array',
          items: {
            type: 'object',
            properties: {
              coin: { type: 'string' },
              hyperliquid: {
                type: ['null', 'object'],
                properties: {
                  market: { type: 'string' },
                  baseUnits: { type: 'number' },
                  fundingRateHourly: { type: 'number' },
                  markPx: { type: 'number' },
                  oraclePx: { type: 'number' },
                  openInterestUsd: { type: 'number' },
                  dayVolumeUsd: { type: 'number' },
                  fundingRateAnnualized: { type: 'number' },
                  fundingAnnualizedPercent: { type: 'number' },
                },
                required: [
                  'market',
                  'baseUnits',
                  'fundingRateHourly',
                  'markPx',
                  'oraclePx',
                  'openInterestUsd',
                  'dayVolumeUsd',
                  'fundingRateAnnualized',
                  'fundingAnnualizedPercent',
                ],
              },
              dydx: {
                type: ['null', 'object'],
                properties: {
                  market: { type: 'string' },
                  baseUnits: { type: 'number' },
                  fundingRateHourly: { type: 'number' },
                  markPx: { type: ['null', 'string'] },
                  oraclePx: { type: 'number' },
                  openInterestUsd: { type: 'number' },
                  dayVolumeUsd: { type: 'number' },
                  fundingRateAnnualized: { type: 'number' },
                  fundingAnnualizedPercent: { type: 'number' },
                },
                required: [
                  'market',
                  'baseUnits',
                  'fundingRateHourly',
                  'markPx',
                  'oraclePx',
                  'openInterestUsd',
                  'dayVolumeUsd',
                  'fundingRateAnnualized',
                  'fundingAnnualizedPercent',
                ],
              },
            },
            required: ['coin', 'hyperliquid', 'dydx'],
          },
        },
      },
      required: ['asOf', 'annualization', 'venues', 'partial', 'coinsMatched', 'notFound', 'coins'],
    },
    example: {
      asOf: '2026-11-28T12:32:19.881Z',
      annualization: 'hourly rate × 8760 (24 × 365), simple',
      venues: [
        { venue: 'hyperliquid', status: 'ok', markets: 3 },
        { venue: 'dydx', status: 'ok', markets: 4 },
      ],
      partial: false,
      coinsMatched: 4,
      notFound: [],
      coins: [
        {
          coin: 'PEPE',
          hyperliquid: {
            market: 'kPEPE',
            baseUnits: 1000,
            fundingRateHourly: 0.0001,
            markPx: 0.0126,
            oraclePx: 0.0125,
            openInterestUsd: 12600000,
            dayVolumeUsd: 5000000,
            fundingRateAnnualized: 0.876,
            fundingAnnualizedPercent: 87.6,
          },
          dydx: {
            market: 'PEPE-USD',
            baseUnits: 1,
            fundingRateHourly: -5e-5,
            markPx: null,
            oraclePx: 1.26e-5,
            openInterestUsd: 12600000,
            dayVolumeUsd: 1000000,
            fundingRateAnnualized: -0.438,
            fundingAnnualizedPercent: -43.8,
          },
        },
        {
          coin: 'ETH',
          hyperliquid: {
            market: 'ETH',
            baseUnits: 1,
            fundingRateHourly: -2e-5,
            markPx: 3999,
            oraclePx: 4000,
            openInterestUsd: 1999500000,
            dayVolumeUsd: 900000000,
            fundingRateAnnualized: -0.1752,
            fundingAnnualizedPercent: -17.52,
          },
          dydx: {
            market: 'ETH-USD',
            baseUnits: 1,
            fundingRateHourly: 2e-5,
            markPx: null,
            oraclePx: 4001,
            openInterestUsd: 80020000,
            dayVolumeUsd: 200000000,
            fundingRateAnnualized: 0.1752,
            fundingAnnualizedPercent: 17.52,
          },
        },
        {
          coin: 'BTC',
          hyperliquid: {
            market: 'BTC',
            baseUnits: 1,
            fundingRateHourly: 1.25e-5,
            markPx: 100010,
            oraclePx: 100000,
            openInterestUsd: 3000350005,
            dayVolumeUsd: 2500000000,
            fundingRateAnnualized: 0.1095,
            fundingAnnualizedPercent: 10.95,
          },
          dydx: {
            market: 'BTC-USD',
            baseUnits: 1,
            fundingRateHourly: 1e-5,
            markPx: null,
            oraclePx: 100020.5,
            openInterestUsd: 100070510.25,
            dayVolumeUsd: 500000000.5,
            fundingRateAnnualized: 0.0876,
            fundingAnnualizedPercent: 8.76,
          },
        },
      ],
    },
  },
  example: { coins: ['BTC', 'ETH', 'SOL'] },
  async run(input, ctx) {
    const results = await crossVenueFunding(ctx)
    const byCoin = new Map<string, Row>()
    for (const r of results) {
      for (const m of r.markets) {
        const row = byCoin.get(m.base) ?? ({ coin: m.base, hyperliquid: null, dydx: null } as Row)
        if (row[m.venue] === null) {
          const { venue: _v, base: _b, ...rest } = m
          row[m.venue] = rest
        }
        byCoin.set(m.base, row)
      }
    }
    const wanted = input.coins?.map((c) => c.toUpperCase())
    let rows = wanted ? wanted.map((c) => byCoin.get(c)).filter((r): r is Row => r !== undefined) : [...byCoin.values()]
    const best = (r: Row, pick: (a: number, b: number) => number) =>
      VENUES.map((v) => r[v]?.fundingRateHourly)
        .filter((x): x is number => x !== undefined)
        .reduce((a, b) => pick(a, b))
    if (input.sort === 'coin') rows.sort((a, b) => a.coin.localeCompare(b.coin))
    else if (input.sort === 'lowest') rows.sort((a, b) => best(a, Math.min) - best(b, Math.min))
    else rows.sort((a, b) => best(b, Math.max) - best(a, Math.max))
    const matched = rows.length
    rows = rows.slice(0, input.limit ?? 50)
    return {
      body: {
        asOf: new Date().toISOString(),
        annualization: `hourly rate × ${HOURS_PER_YEAR} (24 × 365), simple`,
        venues: venueStatus(results),
        partial: results.some((r) => r.status === 'failed'),
        coinsMatched: matched,
        notFound: wanted ? wanted.filter((c) => !byCoin.has(c)) : [],
        coins: rows,
      },
    }
  },
})

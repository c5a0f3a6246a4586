import { defineHandler } from '../../src/pool/handler-contract.js'
import {
  annualize,
  clean,
  dec,
  findPerp,
  fundingHistory,
  HOURS_PER_YEAR,
  HYPERLIQUID_SETTING,
  mul,
  PERP_COIN_PATTERN,
  perpFigures,
  perpMarkets,
} from '../_shared/hyperliquid-info.js'

interface Input {
  coin?: string
  historyHours?: number
  sort?: 'highest' | 'lowest' | 'openInterest'
  limit?: number
  includeDelisted?: boolean
}

/** fundingHistory answers at most 500 entries; one per hour, so 20 days fit in one call */
const MAX_HISTORY_HOURS = 480
const HOUR_MS = 3_600_000

const sorters: Record<
  NonNullable<Input['sort']>,
  (a: ReturnType<typeof perpFigures>, b: ReturnType<typeof perpFigures>) => number
> = {
  highest: (a, b) => (b.fundingRateHourly ?? -Infinity) - (a.fundingRateHourly ?? -Infinity),
  lowest: (a, b) => (a.fundingRateHourly ?? Infinity) - (b.fundingRateHourly ?? Infinity),
  openInterest: (a, b) => (b.openInterestUsd ?? -Infinity) - (a.openInterestUsd ?? -Infinity),
}

/**
 * Current funding of Hyperliquid's perpetual markets (`metaAndAssetCtxs`) and, for one coin, its
 * hourly funding history (`fundingHistory`) over a bounded window.
 * Docs: https://hyperliquid.gitbook.io/hyperliquid-docs/for-developers/api/info-endpoint/perpetuals
 */
export default defineHandler<Input>({
  slug: 'perpdex-funding-rates',
  description:
    'Funding rates on the Hyperliquid perpetuals exchange: current hourly and annualized funding, premium, open interest, mark and oracle price per coin, and for one coin its hourly funding history.',
  providers: [HYPERLIQUID_SETTING],
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      coin: {
        type: 'string',
        pattern: PERP_COIN_PATTERN,
        description:
          'One perp coin (e.g. BTC, ETH, kPEPE). With it: that market and its funding history; without it: a ranked list of all markets.',
      },
      historyHours: {
        type: 'integer',
        minimum: 1,
        maximum: MAX_HISTORY_HOURS,
        default: 24,
        description: `Hours of funding history to return for coin, counted back from now (1–${MAX_HISTORY_HOURS}).`,
      },
      sort: {
        type: 'string',
        enum: ['highest', 'lowest', 'openInterest'],
        default: 'highest',
        description:
          'Order of the market list (without coin): highest funding first, lowest (most negative) first, or largest open interest (USD) first.',
      },
      limit: {
        type: 'integer',
        minimum: 1,
        maximum: 300,
        default: 25,
        description: 'Markets listed (without coin), 1–300.',
      },
      includeDelisted: { type: 'boolean', default: false, description: 'Include delisted markets in the list.' },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      '{ venue, asOf, fundingInterval: "1h", annualization, marketsTotal, markets[]: { coin, fundingRateHourly, fundingRateAnnualized, fundingAnnualizedPercent, premium, markPx, oraclePx, midPx, openInterest (coins), openInterestUsd (openInterest × markPx), dayNotionalVolumeUsd, prevDayPx, maxLeverage, isDelisted }, history (with coin only): { coin, startTime, endTime, count, averageHourly, averageAnnualized, entries[]: { time, fundingRate, premium } } }. ' +
      'Rates are fractions (0.0001 = 0.01 %); annualized = hourly × 24 × 365, simple, not compounded. A value Hyperliquid does not give is null.',
    schema: {
      type: 'object',
      properties: {
        venue: { type: 'string' },
        asOf: { type: 'string' },
        markets: { type: 'array', items: { type: 'object' } },
        history: { type: ['object', 'null'] },
      },
    },
    example: {
      venue: 'hyperliquid',
      asOf: '2026-11-28T12:32:41.019Z',
      fundingInterval: '1h',
      annualization: 'hourly rate × 8760 (24 × 365), simple',
      marketsTotal: 4,
      markets: [
        {
          coin: 'BTC',
          fundingRateHourly: 1.25e-5,
          fundingRateAnnualized: 0.1095,
          fundingAnnualizedPercent: 10.95,
          premium: 0.00031,
          markPx: 100010,
          oraclePx: 100000,
          midPx: 100005,
          openInterest: 30000.5,
          openInterestUsd: 3000350005,
          dayNotionalVolumeUsd: 2500000000,
          prevDayPx: 99000,
          maxLeverage: 40,
          isDelisted: false,
        },
      ],
      history: {
        coin: 'BTC',
        startTime: '2026-11-26T12:32:41.019Z',
        endTime: '2026-11-28T12:32:41.019Z',
        count: 2,
        averageHourly: 2e-5,
        averageAnnualized: 0.1752,
        averageAnnualizedPercent: 17.52,
        entries: [
          { time: '2023-11-14T22:13:20.000Z', fundingRate: 3e-5, premium: 0.0003 },
          { time: '2023-11-14T23:13:20.000Z', fundingRate: 1e-5, premium: 0.0001 },
        ],
      },
    },
  },
  example: { coin: 'BTC', historyHours: 24 },
  async run(input, ctx) {
    const now = Date.now()
    const all = await perpMarkets(ctx)
    const base = {
      venue: 'hyperliquid',
      asOf: new Date(now).toISOString(),
      fundingInterval: '1h',
      annualization: `hourly rate × ${HOURS_PER_YEAR} (24 × 365), simple`,
    }
    if (input.coin !== undefined) {
      // the coin is checked against metaAndAssetCtxs first, so fundingHistory is never asked about a coin Hyperliquid does not list
      const market = findPerp(all, input.coin, 'coin')
      const hours = input.historyHours ?? 24
      const startTime = now - hours * HOUR_MS
      const entries = (await fundingHistory(ctx, market.coin, startTime, now))
        .map((e) => ({
          time: new Date(e.time).toISOString(),
          fundingRate: dec(e.fundingRate),
          premium: dec(e.premium),
        }))
        .sort((a, b) => (a.time < b.time ? -1 : 1))
      const rates = entries.map((e) => e.fundingRate).filter((r): r is number => r !== null)
      const avg = rates.length ? clean(rates.reduce((s, r) => s + r, 0) / rates.length) : null
      return {
        body: {
          ...base,
          marketsTotal: all.length,
          markets: [perpFigures(market)],
          history: {
            coin: market.coin,
            startTime: new Date(startTime).toISOString(),
            endTime: new Date(now).toISOString(),
            count: entries.length,
            averageHourly: avg,
            averageAnnualized: annualize(avg),
            averageAnnualizedPercent: mul(annualize(avg), 100),
            entries,
          },
        },
      }
    }
    const listed = all.filter((m) => input.includeDelisted || !m.isDelisted).map(perpFigures)
    listed.sort(sorters[input.sort ?? 'highest'])
    return {
      body: { ...base, marketsTotal: listed.length, markets: listed.slice(0, input.limit ?? 25), history: null },
    }
  },
})

/**
 * Current perpetual funding on two venues, normalized to hourly and annualized rates, for the
 * cross-venue handlers (perp-funding-rates, funding-rate-arb-scanner):
 *
 * - Hyperliquid: info `metaAndAssetCtxs`, `funding` is the hourly rate
 *   (https://hyperliquid.gitbook.io/hyperliquid-docs/for-developers/api/info-endpoint/perpetuals).
 * - dYdX v4: indexer `GET /v4/perpetualMarkets`, `markets[ticker].nextFundingRate` is the hourly
 *   rate (funding is paid every hour) (https://docs.dydx.xyz/indexer-client/http).
 *
 * One venue failing does not fail the other: each comes back with its own status.
 */
import { HandlerUpstreamError, type HandlerContext } from '../../src/pool/handler-contract.js'
import { annualize, dec, HYPERLIQUID_SETTING, mul, perpMarkets } from './hyperliquid-info.js'
import { joinUrl, providerJson, providerSetting } from './outbound.js'

export const DYDX_SETTING = 'DYDX_INDEXER_URL'
export const VENUES = ['hyperliquid', 'dydx'] as const
export type Venue = (typeof VENUES)[number]

export interface VenueFunding {
  venue: Venue
  /** the venue's own market name: BTC on Hyperliquid, BTC-USD on dYdX */
  market: string
  /** the base asset the markets are matched on (Hyperliquid kPEPE = 1000 PEPE → PEPE) */
  base: string
  /** base units one unit of the market stands for: 1000 for Hyperliquid k-markets, else 1 (its prices are per this many units) */
  baseUnits: number
  fundingRateHourly: number
  fundingRateAnnualized: number | null
  fundingAnnualizedPercent: number | null
  markPx: number | null
  oraclePx: number | null
  openInterestUsd: number | null
  dayVolumeUsd: number | null
}

export interface VenueResult {
  venue: Venue
  status: 'ok' | 'failed'
  error?: string
  markets: VenueFunding[]
}

/** Hyperliquid names 1000-unit markets with a k prefix (kPEPE, kSHIB); the rate is per position value, so it compares with PEPE-USD. */
export function hyperliquidBase(coin: string): string {
  return (/^k[A-Z0-9]/.test(coin) ? coin.slice(1) : coin).toUpperCase()
}

/** Reads both settings first, so a deployment missing either answers 503 before any call. */
export function requireVenueSettings(ctx: HandlerContext) {
  providerSetting(ctx, HYPERLIQUID_SETTING, 'the Hyperliquid info API')
  providerSetting(ctx, DYDX_SETTING, 'the dYdX v4 indexer')
}

function withRates(x: Omit<VenueFunding, 'fundingRateAnnualized' | 'fundingAnnualizedPercent'>): VenueFunding {
  const annual = annualize(x.fundingRateHourly)
  return { ...x, fundingRateAnnualized: annual, fundingAnnualizedPercent: mul(annual, 100) }
}

async function hyperliquidFunding(ctx: HandlerContext): Promise<VenueFunding[]> {
  const markets = await perpMarkets(ctx)
  const out: VenueFunding[] = []
  for (const m of markets) {
    const hourly = dec(m.ctx.funding)
    if (m.isDelisted || hourly === null) continue
    const markPx = dec(m.ctx.markPx)
    out.push(
      withRates({
        venue: 'hyperliquid',
        market: m.coin,
        base: hyperliquidBase(m.coin),
        baseUnits: hyperliquidBase(m.coin) === m.coin.toUpperCase() ? 1 : 1000,
        fundingRateHourly: hourly,
        markPx,
        oraclePx: dec(m.ctx.oraclePx),
        openInterestUsd: mul(dec(m.ctx.openInterest), markPx),
        dayVolumeUsd: dec(m.ctx.dayNtlVlm),
      }),
    )
  }
  return out
}

interface DydxMarket {
  ticker?: string
  status?: string
  oraclePrice?: string
  nextFundingRate?: string
  openInterest?: string
  volume24H?: string
}

async function dydxFunding(ctx: HandlerContext): Promise<VenueFunding[]> {
  const base = providerSetting(ctx, DYDX_SETTING, 'the dYdX v4 indexer')
  const raw = await providerJson<{ markets?: Record<string, DydxMarket> }>(
    'dYdX indexer',
    joinUrl(base, 'v4/perpetualMarkets'),
    { timeoutMs: 8_000 },
  )
  if (!raw || typeof raw.markets !== 'object' || raw.markets === null)
    throw new HandlerUpstreamError('upstream_failed', 'dYdX indexer answered perpetualMarkets in an unexpected shape')
  const out: VenueFunding[] = []
  for (const [key, m] of Object.entries(raw.markets)) {
    const ticker = typeof m?.ticker === 'string' ? m.ticker : key
    const hourly = dec(m?.nextFundingRate)
    // only markets that trade: FINAL_SETTLEMENT, PAUSED, ... pay no funding
    if (m?.status !== 'ACTIVE' || hourly === null) continue
    const oraclePx = dec(m.oraclePrice)
    out.push(
      withRates({
        venue: 'dydx',
        market: ticker,
        base: ticker.replace(/-USD$/i, '').toUpperCase(),
        baseUnits: 1,
        fundingRateHourly: hourly,
        markPx: null,
        oraclePx,
        openInterestUsd: mul(dec(m.openInterest), oraclePx),
        dayVolumeUsd: dec(m.volume24H),
      }),
    )
  }
  return out
}

/** Both venues in parallel, each with its status; 502 only when every venue failed. */
export async function crossVenueFunding(ctx: HandlerContext): Promise<VenueResult[]> {
  requireVenueSettings(ctx)
  const settled = await Promise.allSettled([hyperliquidFunding(ctx), dydxFunding(ctx)])
  const results: VenueResult[] = settled.map((s, i) => {
    const venue = VENUES[i]!
    if (s.status === 'fulfilled') return { venue, status: 'ok', markets: s.value }
    if (!(s.reason instanceof HandlerUpstreamError)) throw s.reason
    return { venue, status: 'failed', error: s.reason.message, markets: [] }
  })
  if (results.every((r) => r.status === 'failed'))
    throw new HandlerUpstreamError('upstream_failed', `every venue failed: ${results.map((r) => r.error).join('; ')}`)
  return results
}

/** The per-venue status list for an answer (no market rows). */
export function venueStatus(results: VenueResult[]) {
  return results.map((r) => ({
    venue: r.venue,
    status: r.status,
    markets: r.markets.length,
    ...(r.error ? { error: r.error } : {}),
  }))
}

/**
 * One typed client for Hyperliquid's public info endpoint (`POST {HYPERLIQUID_API_URL}/info` with
 * a JSON body `{ type, ... }`), shared by every perpdex handler. Hyperliquid sends prices, sizes
 * and rates as decimal strings; `dec` parses them (null when absent or not a number) so no handler
 * ever turns a missing value into 0.
 *
 * Response shapes: https://hyperliquid.gitbook.io/hyperliquid-docs/for-developers/api/info-endpoint
 * and its subpages /perpetuals and /spot.
 *
 * @example
 *   const markets = await perpMarkets(ctx)
 *   const book = await l2Book(ctx, 'BTC')
 */
import { HandlerInputError, HandlerUpstreamError, type HandlerContext } from '../../src/pool/handler-contract.js'
import { joinUrl, providerJson, providerSetting } from './outbound.js'

export const HYPERLIQUID_SETTING = 'HYPERLIQUID_API_URL'
const PROVIDER = 'Hyperliquid'

/** Hyperliquid pays funding every hour; its rates are hourly. */
export const HOURS_PER_YEAR = 24 * 365

/** Perp coin names: BTC, kPEPE, 0G, ... (main dex). */
export const PERP_COIN_PATTERN = '^[A-Za-z0-9]{1,20}$'
export const EVM_ADDRESS_PATTERN = '^0x[0-9a-fA-F]{40}$'

/** POST {base}/info with `request`; 502 when Hyperliquid fails or answers something that is not JSON. */
export async function hyperliquidInfo<T = unknown>(
  ctx: HandlerContext,
  request: Record<string, unknown>,
  opts: { timeoutMs?: number } = {},
): Promise<T> {
  const base = providerSetting(ctx, HYPERLIQUID_SETTING, 'the Hyperliquid info API')
  return providerJson<T>(PROVIDER, joinUrl(base, 'info'), {
    method: 'POST',
    body: request,
    timeoutMs: opts.timeoutMs ?? 8_000,
  })
}

/** 502 for an answer whose shape is not the documented one. */
export function malformed(what: string): HandlerUpstreamError {
  return new HandlerUpstreamError('upstream_failed', `${PROVIDER} answered ${what} in an unexpected shape`)
}

/** A decimal string (or number) from Hyperliquid as a number; null when absent or not numeric. */
export function dec(v: unknown): number | null {
  if (typeof v === 'number') return Number.isFinite(v) ? v : null
  if (typeof v !== 'string' || !/^\s*-?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*$/.test(v)) return null
  const n = Number(v)
  return Number.isFinite(n) ? n : null
}

/** Rounds away binary noise (0.0000125 × 8760 = 0.10950000000000001) to 12 significant digits. */
export function clean(x: number | null): number | null {
  return x === null || !Number.isFinite(x) ? null : Number(x.toPrecision(12))
}

export const mul = (a: number | null, b: number | null): number | null =>
  a === null || b === null ? null : clean(a * b)

/** Hourly rate → simple (not compounded) annual rate: × 24 × 365. */
export const annualize = (hourly: number | null): number | null => mul(hourly, HOURS_PER_YEAR)

// ---------------------------------------------------------------------------------------------
// Perpetuals

export interface PerpAssetCtx {
  funding?: string
  openInterest?: string
  prevDayPx?: string
  dayNtlVlm?: string
  dayBaseVlm?: string
  premium?: string | null
  oraclePx?: string
  markPx?: string
  midPx?: string | null
  impactPxs?: string[] | null
}

export interface PerpMarket {
  coin: string
  /** position in the universe: the asset id of the coin */
  index: number
  szDecimals: number | null
  maxLeverage: number | null
  isDelisted: boolean
  onlyIsolated: boolean
  ctx: PerpAssetCtx
}

/** `metaAndAssetCtxs`: the perp universe zipped with its live contexts (same order, per the docs). */
export async function perpMarkets(ctx: HandlerContext): Promise<PerpMarket[]> {
  const raw = await hyperliquidInfo<unknown>(ctx, { type: 'metaAndAssetCtxs' })
  if (!Array.isArray(raw) || raw.length < 2 || !Array.isArray(raw[0]?.universe) || !Array.isArray(raw[1]))
    throw malformed('metaAndAssetCtxs')
  const universe = raw[0].universe as Array<Record<string, unknown>>
  const ctxs = raw[1] as PerpAssetCtx[]
  return universe.map((u, index) => {
    if (typeof u?.name !== 'string') throw malformed('metaAndAssetCtxs')
    return {
      coin: u.name,
      index,
      szDecimals: typeof u.szDecimals === 'number' ? u.szDecimals : null,
      maxLeverage: typeof u.maxLeverage === 'number' ? u.maxLeverage : null,
      isDelisted: u.isDelisted === true,
      onlyIsolated: u.onlyIsolated === true,
      ctx: ctxs[index] ?? {},
    }
  })
}

/** The market named `coin` (case-insensitive), or 422 on `field`. */
export function findPerp(markets: PerpMarket[], coin: string, field: string): PerpMarket {
  const m = markets.find((x) => x.coin === coin) ?? markets.find((x) => x.coin.toLowerCase() === coin.toLowerCase())
  if (!m) throw new HandlerInputError(field, `${coin} is not a Hyperliquid perpetual market`, 422)
  return m
}

/** A perp market's live figures with the decimal strings parsed. */
export function perpFigures(m: PerpMarket) {
  const c = m.ctx
  const hourly = dec(c.funding)
  const markPx = dec(c.markPx)
  const openInterest = dec(c.openInterest)
  return {
    coin: m.coin,
    fundingRateHourly: hourly,
    fundingRateAnnualized: annualize(hourly),
    fundingAnnualizedPercent: mul(annualize(hourly), 100),
    premium: dec(c.premium),
    markPx,
    oraclePx: dec(c.oraclePx),
    midPx: dec(c.midPx),
    openInterest,
    openInterestUsd: mul(openInterest, markPx),
    dayNotionalVolumeUsd: dec(c.dayNtlVlm),
    prevDayPx: dec(c.prevDayPx),
    maxLeverage: m.maxLeverage,
    isDelisted: m.isDelisted,
  }
}

export interface FundingHistoryEntry {
  coin: string
  fundingRate: string
  premium: string
  time: number
}

/** `fundingHistory` for one coin between startTime and endTime (ms). */
export async function fundingHistory(
  ctx: HandlerContext,
  coin: string,
  startTime: number,
  endTime: number,
): Promise<FundingHistoryEntry[]> {
  const raw = await hyperliquidInfo<unknown>(ctx, { type: 'fundingHistory', coin, startTime, endTime })
  if (!Array.isArray(raw)) throw malformed('fundingHistory')
  return raw.filter((e): e is FundingHistoryEntry => typeof e?.time === 'number')
}

// ---------------------------------------------------------------------------------------------
// Order book

export interface BookLevel {
  px: number
  sz: number
  n: number
}

export interface L2Book {
  coin: string
  time: number | null
  bids: BookLevel[]
  asks: BookLevel[]
}

/**
 * `l2Book` for a coin (a perp name, or a spot pair's coin: "PURR/USDC", "@107"). Bids best first,
 * asks best first. Null when Hyperliquid has no book for that coin (it answers `null`).
 */
export async function l2Book(ctx: HandlerContext, coin: string, nSigFigs?: number): Promise<L2Book | null> {
  const request: Record<string, unknown> = { type: 'l2Book', coin }
  if (nSigFigs !== undefined) request.nSigFigs = nSigFigs
  const raw = await hyperliquidInfo<any>(ctx, request)
  if (raw === null) return null
  if (!Array.isArray(raw?.levels) || raw.levels.length !== 2) throw malformed('l2Book')
  const side = (list: unknown): BookLevel[] => {
    if (!Array.isArray(list)) throw malformed('l2Book')
    return list.map((l: any) => {
      const px = dec(l?.px)
      const sz = dec(l?.sz)
      if (px === null || sz === null) throw malformed('l2Book')
      return { px, sz, n: typeof l?.n === 'number' ? l.n : 0 }
    })
  }
  return {
    coin: typeof raw.coin === 'string' ? raw.coin : coin,
    time: typeof raw.time === 'number' ? raw.time : null,
    bids: side(raw.levels[0]),
    asks: side(raw.levels[1]),
  }
}

/** Best bid, best ask, mid and spread of a book (nulls when a side is empty). */
export function bookTop(book: L2Book) {
  const bestBid = book.bids[0]?.px ?? null
  const bestAsk = book.asks[0]?.px ?? null
  const mid = bestBid !== null && bestAsk !== null ? clean((bestBid + bestAsk) / 2) : null
  const spread = bestBid !== null && bestAsk !== null ? clean(bestAsk - bestBid) : null
  const spreadBps = spread !== null && mid ? clean((spread / mid) * 10_000) : null
  return { bestBid, bestAsk, mid, spread, spreadBps }
}

// ---------------------------------------------------------------------------------------------
// Spot

export interface SpotToken {
  name: string
  szDecimals?: number
  weiDecimals?: number
  index: number
  tokenId?: string
  isCanonical?: boolean
  evmContract?: { address: string } | null
  fullName?: string | null
}

export interface SpotPair {
  name: string
  tokens: [number, number]
  index: number
  isCanonical?: boolean
}

export interface SpotAssetCtx {
  coin?: string
  dayNtlVlm?: string
  dayBaseVlm?: string
  markPx?: string
  midPx?: string | null
  prevDayPx?: string
  circulatingSupply?: string
  totalSupply?: string
}

export interface SpotMeta {
  tokens: SpotToken[]
  universe: SpotPair[]
}

/** `spotMetaAndAssetCtxs`: spot tokens, pairs and one context per pair (same order as the universe). */
export async function spotMetaAndCtxs(ctx: HandlerContext): Promise<{ meta: SpotMeta; ctxs: SpotAssetCtx[] }> {
  const raw = await hyperliquidInfo<any>(ctx, { type: 'spotMetaAndAssetCtxs' })
  if (
    !Array.isArray(raw) ||
    raw.length < 2 ||
    !Array.isArray(raw[0]?.tokens) ||
    !Array.isArray(raw[0]?.universe) ||
    !Array.isArray(raw[1])
  )
    throw malformed('spotMetaAndAssetCtxs')
  return { meta: raw[0] as SpotMeta, ctxs: raw[1] as SpotAssetCtx[] }
}

/** `spotMeta`: spot tokens and pairs, without prices. */
export async function spotMeta(ctx: HandlerContext): Promise<SpotMeta> {
  const raw = await hyperliquidInfo<any>(ctx, { type: 'spotMeta' })
  if (!Array.isArray(raw?.tokens) || !Array.isArray(raw?.universe)) throw malformed('spotMeta')
  return raw as SpotMeta
}

/** The spot pair `BASE/QUOTE` (token names, case-insensitive) or a pair coin (`@107`, `PURR/USDC`), else null. */
export function findSpotPair(meta: SpotMeta, wanted: string): { pair: SpotPair; base: string; quote: string } | null {
  // entries without the documented fields are skipped rather than crashing the lookup
  const byIndex = new Map(meta.tokens.filter((t) => typeof t?.name === 'string').map((t) => [t.index, t]))
  const w = wanted.trim().toLowerCase()
  for (const pair of meta.universe) {
    if (typeof pair?.name !== 'string') continue
    const base = byIndex.get(pair.tokens?.[0])?.name
    const quote = byIndex.get(pair.tokens?.[1])?.name
    if (base === undefined || quote === undefined) continue
    if (pair.name.toLowerCase() === w || `${base}/${quote}`.toLowerCase() === w) return { pair, base, quote }
  }
  return null
}

// ---------------------------------------------------------------------------------------------
// Accounts

export interface AssetPosition {
  type?: string
  position: {
    coin: string
    szi: string
    entryPx?: string | null
    positionValue?: string
    unrealizedPnl?: string
    returnOnEquity?: string
    liquidationPx?: string | null
    marginUsed?: string
    maxLeverage?: number
    leverage?: { type: string; value: number; rawUsd?: string }
    cumFunding?: { allTime?: string; sinceOpen?: string; sinceChange?: string }
  }
}

export interface MarginSummary {
  accountValue?: string
  totalNtlPos?: string
  totalRawUsd?: string
  totalMarginUsed?: string
}

export interface ClearinghouseState {
  assetPositions: AssetPosition[]
  marginSummary?: MarginSummary
  crossMarginSummary?: MarginSummary
  crossMaintenanceMarginUsed?: string
  withdrawable?: string
  time?: number
}

/** `clearinghouseState` of a user (an address with no account answers empty positions and zeros). */
export async function clearinghouseState(ctx: HandlerContext, user: string): Promise<ClearinghouseState> {
  const raw = await hyperliquidInfo<any>(ctx, { type: 'clearinghouseState', user: user.toLowerCase() })
  if (!raw || !Array.isArray(raw.assetPositions)) throw malformed('clearinghouseState')
  return raw as ClearinghouseState
}

/** One perp position with the decimal strings parsed; side from the sign of szi. */
export function parsePosition(p: AssetPosition['position']) {
  const size = dec(p.szi)
  return {
    coin: p.coin,
    side: size === null || size === 0 ? null : size > 0 ? ('long' as const) : ('short' as const),
    size,
    entryPx: dec(p.entryPx),
    positionValueUsd: dec(p.positionValue),
    unrealizedPnlUsd: dec(p.unrealizedPnl),
    returnOnEquity: dec(p.returnOnEquity),
    liquidationPx: dec(p.liquidationPx),
    marginUsedUsd: dec(p.marginUsed),
    leverage: p.leverage
      ? { type: p.leverage.type ?? null, value: typeof p.leverage.value === 'number' ? p.leverage.value : null }
      : null,
    maxLeverage: typeof p.maxLeverage === 'number' ? p.maxLeverage : null,
    cumulativeFundingUsd: p.cumFunding
      ? { allTime: dec(p.cumFunding.allTime), sinceOpen: dec(p.cumFunding.sinceOpen) }
      : null,
  }
}

export function parseMarginSummary(m: MarginSummary | undefined) {
  if (!m) return null
  return {
    accountValueUsd: dec(m.accountValue),
    totalNotionalPositionUsd: dec(m.totalNtlPos),
    totalRawUsd: dec(m.totalRawUsd),
    totalMarginUsedUsd: dec(m.totalMarginUsed),
  }
}

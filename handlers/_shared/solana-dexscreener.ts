/**
 * DexScreener's public API (keyless) for the Solana pool and launch handlers: calls through the
 * configured DEXSCREENER_API_URL and maps its pair objects to one flat, documented shape.
 * Reference: https://docs.dexscreener.com/api/reference
 *
 * @example
 *   const pairs = await dexscreenerJson<DexPair[]>(ctx, 'token-pairs/v1/solana/So111...')
 */
import { HandlerUpstreamError, type HandlerContext } from '../../src/pool/handler-contract.js'
import { joinUrl, providerJson, providerSetting } from './outbound.js'

export const DEXSCREENER_SETTING = 'DEXSCREENER_API_URL'

/** The pair object of the DexScreener reference (numbers are numbers here, prices strings). */
export interface DexPair {
  chainId: string
  dexId: string
  url?: string
  pairAddress: string
  labels?: string[]
  baseToken: { address: string; name?: string; symbol?: string }
  quoteToken: { address: string; name?: string; symbol?: string }
  priceNative?: string
  priceUsd?: string | null
  txns?: Record<string, { buys?: number; sells?: number }>
  volume?: Record<string, number>
  priceChange?: Record<string, number> | null
  liquidity?: { usd?: number; base?: number; quote?: number } | null
  fdv?: number | null
  marketCap?: number | null
  pairCreatedAt?: number | null
  info?: {
    imageUrl?: string
    websites?: Array<{ url: string; label?: string }>
    socials?: Array<{ platform?: string; type?: string; handle?: string; url?: string }>
  } | null
  boosts?: { active?: number } | null
}

/** GET {base}/{path}; 502 when DexScreener fails or answers something that is not JSON. */
export async function dexscreenerJson<T>(
  ctx: HandlerContext,
  path: string,
  query?: Record<string, string>,
): Promise<T> {
  const base = providerSetting(ctx, DEXSCREENER_SETTING, 'the DexScreener API')
  return providerJson<T>('DexScreener', joinUrl(base, path, query), { timeoutMs: 8_000 })
}

export function badShape(what: string): HandlerUpstreamError {
  return new HandlerUpstreamError('upstream_failed', `DexScreener answered ${what} in an unexpected shape`)
}

const num = (v: unknown): number | null =>
  typeof v === 'number' && Number.isFinite(v)
    ? v
    : typeof v === 'string' && v.trim() !== '' && Number.isFinite(Number(v))
      ? Number(v)
      : null

/** Keeps only objects that look like pairs (chainId, pairAddress, base and quote token). */
export function isPair(p: unknown): p is DexPair {
  const x = p as DexPair
  return (
    !!x &&
    typeof x === 'object' &&
    typeof x.chainId === 'string' &&
    typeof x.pairAddress === 'string' &&
    typeof x.baseToken?.address === 'string' &&
    typeof x.quoteToken?.address === 'string'
  )
}

/** One pool in the answer shape; `now` fixes the age computation. */
export function mapPool(p: DexPair, now: number) {
  // ms since the epoch; a figure that is no date (out of range) reads as unknown rather than a RangeError
  const rawCreated = num(p.pairCreatedAt)
  const created = rawCreated !== null && Number.isFinite(new Date(rawCreated).getTime()) ? rawCreated : null
  const token = (t: DexPair['baseToken']) => ({ address: t.address, name: t.name ?? null, symbol: t.symbol ?? null })
  return {
    dex: p.dexId,
    labels: Array.isArray(p.labels) ? p.labels : [],
    pairAddress: p.pairAddress,
    url: p.url ?? null,
    baseToken: token(p.baseToken),
    quoteToken: token(p.quoteToken),
    priceUsd: num(p.priceUsd),
    priceNative: num(p.priceNative),
    liquidityUsd: num(p.liquidity?.usd),
    liquidityBase: num(p.liquidity?.base),
    liquidityQuote: num(p.liquidity?.quote),
    volumeUsd: { m5: num(p.volume?.m5), h1: num(p.volume?.h1), h6: num(p.volume?.h6), h24: num(p.volume?.h24) },
    txns24h: p.txns?.h24 ? { buys: num(p.txns.h24.buys), sells: num(p.txns.h24.sells) } : null,
    priceChangePercent: { h1: num(p.priceChange?.h1), h24: num(p.priceChange?.h24) },
    fdvUsd: num(p.fdv),
    marketCapUsd: num(p.marketCap),
    createdAt: created === null ? null : new Date(created).toISOString(),
    ageHours: created === null ? null : Math.round(((now - created) / 3_600_000) * 100) / 100,
  }
}

export type Pool = ReturnType<typeof mapPool>

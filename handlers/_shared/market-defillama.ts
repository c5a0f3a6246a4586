/**
 * DefiLlama yields (`GET {DEFILLAMA_YIELDS_URL}/pools`), shared by defi-yield-scanner and
 * base-defi-opportunities.
 *
 * Response shape, https://api-docs.defillama.com/#tag/yields/get/pools (the yields section of
 * https://defillama.com/docs/api): `{ status: "success", data: Pool[] }`, each pool with chain,
 * project, symbol, pool (id), tvlUsd, apy, apyBase, apyReward, rewardTokens, stablecoin,
 * ilRisk ("yes"/"no"), exposure ("single"/"multi"), poolMeta, underlyingTokens, apyPct1D/7D/30D,
 * apyMean30d, apyBase7d, il7d, volumeUsd1d/7d, mu, sigma, count, outlier and predictions
 * { predictedClass, predictedProbability, binnedConfidence }.
 *
 * The list has every pool DefiLlama tracks (tens of thousands, several MB of JSON); it is read
 * whole, up to MAX_POOLS_BYTES, and a larger answer is a 502 rather than a silently cut list.
 */
import { HandlerUpstreamError, type HandlerContext } from '../../src/pool/handler-contract.js'
import { callProvider, joinUrl, providerSetting } from './outbound.js'

/** Read cap for the full pools list (about 10–15 MB in 2025; room to grow, bounded for the worker's memory). */
export const MAX_POOLS_BYTES = 64 * 1024 * 1024
export const POOLS_TIMEOUT_MS = 25_000

export interface LlamaPool {
  pool: string
  chain: string
  project: string
  symbol: string
  tvlUsd: number | null
  apy: number | null
  apyBase: number | null
  apyReward: number | null
  apyMean30d: number | null
  apyPct1D: number | null
  apyPct7D: number | null
  apyPct30D: number | null
  stablecoin: boolean | null
  ilRisk: string | null
  exposure: string | null
  poolMeta: string | null
  rewardTokens: string[]
  underlyingTokens: string[]
  il7d: number | null
  volumeUsd1d: number | null
  outlier: boolean | null
  prediction: {
    predictedClass: string | null
    predictedProbability: number | null
    binnedConfidence: number | null
  } | null
}

const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null)
const str = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null)
const bool = (v: unknown): boolean | null => (typeof v === 'boolean' ? v : null)
const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [])

/**
 * The normalised list is kept per worker thread for POOLS_CACHE_MS and one read is shared by the
 * calls that arrive while it runs: DefiLlama recomputes yields hourly, and every call otherwise
 * downloads and parses the whole list (a hundred MB of heap at once in a worker shared by other calls).
 */
export const POOLS_CACHE_MS = 60_000
const cache = new Map<string, { at: number; pools: Promise<LlamaPool[]> }>()

/** Every pool of DefiLlama's yields API, normalised (fields absent from the source are null). */
export async function fetchLlamaPools(ctx: HandlerContext): Promise<LlamaPool[]> {
  const base = providerSetting(ctx, 'DEFILLAMA_YIELDS_URL', 'DefiLlama yields')
  const hit = cache.get(base)
  if (hit && Date.now() - hit.at < POOLS_CACHE_MS) return hit.pools
  const pools = readPools(base)
  cache.set(base, { at: Date.now(), pools })
  // a failed read is not kept
  pools.catch(() => cache.get(base)?.pools === pools && cache.delete(base))
  return pools
}

async function readPools(base: string): Promise<LlamaPool[]> {
  const r = await callProvider('DefiLlama yields', joinUrl(base, '/pools'), {
    maxBytes: MAX_POOLS_BYTES,
    timeoutMs: POOLS_TIMEOUT_MS,
  })
  const json = r.json as { status?: unknown; data?: unknown } | undefined
  if (!json || typeof json !== 'object' || !Array.isArray(json.data))
    throw new HandlerUpstreamError('upstream_failed', 'DefiLlama yields answered without a pools list')
  const out: LlamaPool[] = []
  for (const p of json.data as Array<Record<string, unknown>>) {
    if (
      !p ||
      typeof p !== 'object' ||
      typeof p.pool !== 'string' ||
      typeof p.chain !== 'string' ||
      typeof p.project !== 'string'
    )
      continue
    const pred = p.predictions as Record<string, unknown> | null | undefined
    out.push({
      pool: p.pool,
      chain: p.chain,
      project: p.project,
      symbol: typeof p.symbol === 'string' ? p.symbol : '',
      tvlUsd: num(p.tvlUsd),
      apy: num(p.apy),
      apyBase: num(p.apyBase),
      apyReward: num(p.apyReward),
      apyMean30d: num(p.apyMean30d),
      apyPct1D: num(p.apyPct1D),
      apyPct7D: num(p.apyPct7D),
      apyPct30D: num(p.apyPct30D),
      stablecoin: bool(p.stablecoin),
      ilRisk: str(p.ilRisk),
      exposure: str(p.exposure),
      poolMeta: str(p.poolMeta),
      rewardTokens: strings(p.rewardTokens),
      underlyingTokens: strings(p.underlyingTokens),
      il7d: num(p.il7d),
      volumeUsd1d: num(p.volumeUsd1d),
      outlier: bool(p.outlier),
      prediction:
        pred && typeof pred === 'object'
          ? {
              predictedClass: str(pred.predictedClass),
              predictedProbability: num(pred.predictedProbability),
              binnedConfidence: num(pred.binnedConfidence),
            }
          : null,
    })
  }
  return out
}

/** True when `symbol` (a pool symbol like "USDC-WETH") has `wanted` as one of its tokens, case-insensitively. */
export function symbolHasToken(symbol: string, wanted: string): boolean {
  const w = wanted.trim().toUpperCase()
  return symbol
    .toUpperCase()
    .split(/[-/\s+]+/)
    .includes(w)
}

/** The DefiLlama pool page (its documented public site; the pool id is its key). */
export const poolUrl = (id: string) => `https://defillama.com/yields/pool/${encodeURIComponent(id)}`

/** The answer's view of a pool. */
export function presentPool(p: LlamaPool) {
  return {
    pool: p.pool,
    url: poolUrl(p.pool),
    chain: p.chain,
    project: p.project,
    symbol: p.symbol,
    poolMeta: p.poolMeta,
    tvlUsd: p.tvlUsd,
    apy: p.apy,
    apyBase: p.apyBase,
    apyReward: p.apyReward,
    apyMean30d: p.apyMean30d,
    apyChange1d: p.apyPct1D,
    apyChange7d: p.apyPct7D,
    apyChange30d: p.apyPct30D,
    stablecoin: p.stablecoin,
    ilRisk: p.ilRisk,
    exposure: p.exposure,
    rewardTokens: p.rewardTokens,
    underlyingTokens: p.underlyingTokens,
    volumeUsd1d: p.volumeUsd1d,
    outlier: p.outlier,
    prediction: p.prediction,
  }
}

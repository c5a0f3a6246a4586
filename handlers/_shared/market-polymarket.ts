/**
 * Polymarket Gamma API reads shared by prediction-market-data and prediction-event-resolver.
 *
 * Shapes (https://docs.polymarket.com/developers/gamma-markets-api/get-markets,
 * https://docs.polymarket.com/developers/gamma-markets-api/get-events,
 * https://docs.polymarket.com/api-reference/markets/list-markets,
 * https://docs.polymarket.com/api-reference/events/list-events):
 * - `GET /markets` and `GET /events` answer arrays; `GET /markets/{id}` and `GET /events/{id}` one
 *   object (404 when there is none).
 * - A market has id, question, slug, conditionId, description, outcomes and outcomePrices as
 *   JSON-encoded string arrays (`"[\"Yes\", \"No\"]"`, `"[\"0.62\", \"0.38\"]"`), volume and
 *   liquidity as strings with volumeNum/liquidityNum numbers, volume24hr, startDate, endDate,
 *   closedTime, active, closed, archived, resolutionSource, umaResolutionStatus, lastTradePrice,
 *   bestBid, bestAsk.
 * - An event has id, slug, title, description, startDate, endDate, active, closed, volume,
 *   volume24hr, liquidity (numbers), resolutionSource, tags[] { id, label, slug } and markets[].
 */
import { HandlerUpstreamError, type HandlerContext } from '../../src/pool/handler-contract.js'
import { callProvider, joinUrl, providerSetting } from './outbound.js'

export type GammaObject = Record<string, unknown>

/** GET a Gamma path; 404 answers `undefined` (nothing with that id). */
export async function gammaGet(
  ctx: HandlerContext,
  path: string,
  query: Record<string, string | number | boolean | undefined> = {},
): Promise<unknown> {
  const base = providerSetting(ctx, 'POLYMARKET_GAMMA_URL', 'Polymarket market data')
  const r = await callProvider('Polymarket Gamma', joinUrl(base, path, query), {
    acceptStatus: [404],
    maxBytes: 8 * 1024 * 1024,
  })
  if (r.status === 404) return undefined
  if (r.json === undefined)
    throw new HandlerUpstreamError('upstream_failed', 'Polymarket Gamma answered something that is not JSON')
  return r.json
}

/** GET a Gamma list path; anything but an array is a provider failure. */
export async function gammaList(
  ctx: HandlerContext,
  path: string,
  query: Record<string, string | number | boolean | undefined>,
): Promise<GammaObject[]> {
  const json = await gammaGet(ctx, path, query)
  if (json === undefined) return []
  if (!Array.isArray(json))
    throw new HandlerUpstreamError(
      'upstream_failed',
      `Polymarket Gamma answered ${path} with something that is not a list`,
    )
  return json.filter((x): x is GammaObject => !!x && typeof x === 'object')
}

/**
 * One event or market by its slug, whatever its status: `GET /events/slug/{slug}` and
 * `GET /markets/slug/{slug}` (https://docs.polymarket.com/api-reference/events/get-event-by-slug,
 * https://docs.polymarket.com/api-reference/markets/get-market-by-slug); undefined when there is
 * none (404). Not the lists' `?slug=` filter: the lists apply their status defaults (closed=false)
 * to it, so a closed or resolved event or market would not be found that way.
 */
export async function gammaBySlug(
  ctx: HandlerContext,
  kind: 'events' | 'markets',
  slug: string,
): Promise<GammaObject | undefined> {
  const json = await gammaGet(ctx, `/${kind}/slug/${encodeURIComponent(slug)}`)
  if (json === undefined || json === null) return undefined
  if (typeof json !== 'object' || Array.isArray(json))
    throw new HandlerUpstreamError(
      'upstream_failed',
      `Polymarket Gamma answered /${kind}/slug with something that is not an object`,
    )
  return json as GammaObject
}

export const num = (v: unknown): number | null => {
  if (typeof v === 'number') return Number.isFinite(v) ? v : null
  if (typeof v === 'string' && v.trim() !== '' && Number.isFinite(Number(v))) return Number(v)
  return null
}
export const text = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null)
export const flag = (v: unknown): boolean | null => (typeof v === 'boolean' ? v : null)

/** Gamma sends some arrays as JSON-encoded strings; accepts either form, [] when neither. */
export function jsonArray(v: unknown): unknown[] {
  if (Array.isArray(v)) return v
  if (typeof v !== 'string') return []
  try {
    const parsed: unknown = JSON.parse(v)
    return Array.isArray(parsed) ? parsed : []
  } catch {
    return []
  }
}

/** Outcomes paired with their prices (probabilities 0–1); a price is null when the lists disagree. */
export function outcomesOf(m: GammaObject): Array<{ name: string; price: number | null }> {
  const names = jsonArray(m.outcomes).map((x) => String(x))
  const prices = jsonArray(m.outcomePrices).map(num)
  return names.map((name, i) => ({ name, price: prices.length === names.length ? (prices[i] ?? null) : null }))
}

export const eventUrl = (slug: string) => `https://polymarket.com/event/${encodeURIComponent(slug)}`

/** A market as both endpoints show it. */
export function presentMarket(m: GammaObject) {
  return {
    id: text(m.id) ?? (typeof m.id === 'number' ? String(m.id) : null),
    slug: text(m.slug),
    question: text(m.question),
    conditionId: text(m.conditionId),
    outcomes: outcomesOf(m),
    volume: num(m.volumeNum) ?? num(m.volume),
    volume24hr: num(m.volume24hr),
    liquidity: num(m.liquidityNum) ?? num(m.liquidity),
    lastTradePrice: num(m.lastTradePrice),
    bestBid: num(m.bestBid),
    bestAsk: num(m.bestAsk),
    startDate: text(m.startDate),
    endDate: text(m.endDate),
    active: flag(m.active),
    closed: flag(m.closed),
  }
}

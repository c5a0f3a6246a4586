/**
 * Brave Search API client for the search endpoints: web search and query suggestions.
 *
 * - Web search: `GET {BRAVE_SEARCH_URL}/res/v1/web/search` with header `X-Subscription-Token`;
 *   parameters https://api-dashboard.search.brave.com/app/documentation/web-search/query,
 *   response (WebSearchApiResponse: `query`, `web.results[]` of title, url, description, age,
 *   page_age, language, family_friendly, meta_url, extra_snippets)
 *   https://api-dashboard.search.brave.com/app/documentation/web-search/responses
 * - Suggest: `GET {BRAVE_SEARCH_URL}/res/v1/suggest/search` (SuggestSearchApiResponse:
 *   `query.original`, `results[]` of query, is_entity, title, description)
 *   https://api-dashboard.search.brave.com/app/documentation/suggest/responses
 *
 * A 422 naming one of our parameters (an unsupported country or language) becomes a 400 on the
 * buyer's field; every other failure is 502 upstream_failed.
 */
import { HandlerInputError, HandlerUpstreamError, type HandlerContext } from '../../src/pool/handler-contract.js'
import { callProvider, joinUrl, optionalSetting, providerSetting } from './outbound.js'

/** Settings every web-search-backed endpoint needs (declare them in the handler's `providers`). */
export const SEARCH_PROVIDERS = ['BRAVE_SEARCH_URL', 'BRAVE_SEARCH_API_KEY']
/** Brave's documented maximum for `count` on web search */
export const BRAVE_MAX_COUNT = 20
/** Brave's documented maximum query length */
export const BRAVE_MAX_QUERY = 400

export type Safesearch = 'off' | 'moderate' | 'strict'

export interface WebSearchOptions {
  q: string
  count: number
  offset?: number
  /** 2-letter country code or ALL */
  country?: string
  searchLang?: string
  safesearch?: Safesearch
  /** pd, pw, pm, py or YYYY-MM-DDtoYYYY-MM-DD */
  freshness?: string
  extraSnippets?: boolean
  /** buyer field names of the options, so a refused value is a 400 on the right field */
  fields?: Partial<Record<'q' | 'country' | 'search_lang' | 'freshness' | 'safesearch' | 'count' | 'offset', string>>
}

export interface WebResult {
  title: string
  url: string
  description: string | null
  /** as Brave shows it ("3 days ago", "August 3, 2023"); null when Brave does not date the page */
  age: string | null
  /** publication or modification date Brave resolved (ISO-like), else null */
  pageAge: string | null
  language: string | null
  familyFriendly: boolean | null
  hostname: string | null
  extraSnippets?: string[]
}

export interface WebSearchAnswer {
  query: string
  /** the query Brave actually ran when it corrected the spelling, else null */
  alteredQuery: string | null
  moreResultsAvailable: boolean | null
  results: WebResult[]
}

/** 503 upstream_not_configured now, before other providers are called, when web search is not set. */
export function assertSearchConfigured(ctx: HandlerContext): void {
  providerSetting(ctx, 'BRAVE_SEARCH_URL', 'web search')
  providerSetting(ctx, 'BRAVE_SEARCH_API_KEY', 'web search')
}

const braveHeaders = (key: string) => ({ 'x-subscription-token': key, accept: 'application/json' })

/** One Brave web search. */
export async function braveWebSearch(ctx: HandlerContext, o: WebSearchOptions): Promise<WebSearchAnswer> {
  const base = providerSetting(ctx, 'BRAVE_SEARCH_URL', 'web search')
  const key = providerSetting(ctx, 'BRAVE_SEARCH_API_KEY', 'web search')
  const url = joinUrl(base, 'res/v1/web/search', {
    q: o.q,
    count: o.count,
    offset: o.offset || undefined,
    country: o.country,
    search_lang: o.searchLang,
    safesearch: o.safesearch,
    freshness: o.freshness,
    extra_snippets: o.extraSnippets ? true : undefined,
    // plain text snippets (no <strong> highlighting markup)
    text_decorations: false,
  })
  const r = await callProvider('Brave Search', url, { headers: braveHeaders(key), acceptStatus: [422] })
  if (r.status === 422) refusedParameter(r.json, o.fields ?? {})
  const body = r.json as { type?: unknown; query?: Record<string, unknown>; web?: { results?: unknown } } | undefined
  if (!body || typeof body !== 'object' || body.type !== 'search')
    throw new HandlerUpstreamError('upstream_failed', 'Brave Search answered something that is not a search response')
  // `web` is absent when there are no web results
  const raw = body.web?.results
  if (raw !== undefined && !Array.isArray(raw))
    throw new HandlerUpstreamError('upstream_failed', 'Brave Search answered web.results that is not a list')
  const results: WebResult[] = []
  for (const item of (raw ?? []) as Array<Record<string, unknown>>) {
    if (!item || typeof item.url !== 'string' || !/^https?:\/\//i.test(item.url)) continue
    const meta = item.meta_url as { hostname?: unknown } | undefined
    const res: WebResult = {
      title: plain(str(item.title) ?? item.url),
      url: item.url,
      description: str(item.description) === null ? null : plain(item.description as string),
      age: str(item.age),
      pageAge: str(item.page_age),
      language: str(item.language),
      familyFriendly: typeof item.family_friendly === 'boolean' ? item.family_friendly : null,
      hostname: str(meta?.hostname) ?? hostOf(item.url),
    }
    if (o.extraSnippets)
      res.extraSnippets = Array.isArray(item.extra_snippets)
        ? item.extra_snippets.filter((s): s is string => typeof s === 'string').map(plain)
        : []
    results.push(res)
  }
  return {
    query: str(body.query?.original) ?? o.q,
    alteredQuery: str(body.query?.altered),
    moreResultsAvailable:
      typeof body.query?.more_results_available === 'boolean' ? body.query.more_results_available : null,
    results: results.slice(0, o.count),
  }
}

export interface Suggestion {
  query: string
  isEntity: boolean | null
  title: string | null
  description: string | null
}

/**
 * Brave query suggestions (autocomplete). Uses BRAVE_SUGGEST_API_KEY when set (Suggest is its
 * own Brave plan), else BRAVE_SEARCH_API_KEY.
 */
export async function braveSuggest(
  ctx: HandlerContext,
  o: {
    q: string
    count: number
    country?: string
    lang?: string
    fields?: Partial<Record<'q' | 'country' | 'lang', string>>
  },
): Promise<{ query: string; suggestions: Suggestion[] }> {
  const base = providerSetting(ctx, 'BRAVE_SEARCH_URL', 'query suggestions')
  const key =
    optionalSetting(ctx, 'BRAVE_SUGGEST_API_KEY') ??
    providerSetting(ctx, 'BRAVE_SEARCH_API_KEY', 'query suggestions (or BRAVE_SUGGEST_API_KEY)')
  const url = joinUrl(base, 'res/v1/suggest/search', { q: o.q, count: o.count, country: o.country, lang: o.lang })
  const r = await callProvider('Brave Suggest', url, { headers: braveHeaders(key), acceptStatus: [422] })
  if (r.status === 422) refusedParameter(r.json, o.fields ?? {})
  const body = r.json as { type?: unknown; query?: { original?: unknown }; results?: unknown } | undefined
  if (!body || typeof body !== 'object' || body.type !== 'suggest' || !Array.isArray(body.results))
    throw new HandlerUpstreamError('upstream_failed', 'Brave Suggest answered something that is not a suggest response')
  const seen = new Set<string>()
  const suggestions: Suggestion[] = []
  for (const s of body.results as Array<Record<string, unknown>>) {
    const q = str(s?.query)
    if (!q || seen.has(q.toLowerCase())) continue
    seen.add(q.toLowerCase())
    suggestions.push({
      query: q,
      isEntity: typeof s.is_entity === 'boolean' ? s.is_entity : null,
      title: str(s.title),
      description: str(s.description),
    })
  }
  return { query: str(body.query?.original) ?? o.q, suggestions: suggestions.slice(0, o.count) }
}

/** Brave's 422 ErrorResponse names the refused parameter in error.meta.errors[].loc */
function refusedParameter(json: unknown, fields: Record<string, string | undefined>): never {
  const listed = (json as { error?: { meta?: { errors?: unknown } } } | null | undefined)?.error?.meta?.errors
  // an odd 422 body (errors not a list, null entries) is an upstream failure, not a crash
  const errors = (Array.isArray(listed) ? listed : []) as Array<{ loc?: unknown[]; msg?: unknown } | null>
  for (const e of errors) {
    if (!e || typeof e !== 'object') continue
    const param = Array.isArray(e.loc) ? e.loc[e.loc.length - 1] : undefined
    const field = typeof param === 'string' ? fields[param] : undefined
    if (field)
      throw new HandlerInputError(
        field,
        `${field} was refused by Brave Search${typeof e.msg === 'string' ? `: ${e.msg.slice(0, 200)}` : ''}`,
      )
  }
  // e.g. SUBSCRIPTION_TOKEN_INVALID: Brave answers a bad key with 422, and the operator needs to know which problem it is
  const code = (json as { error?: { code?: unknown } } | null | undefined)?.error?.code
  throw new HandlerUpstreamError(
    'upstream_failed',
    `Brave Search answered HTTP 422${typeof code === 'string' && /^[A-Z][A-Z0-9_]{0,63}$/.test(code) ? ` (${code})` : ''}`,
  )
}

/**
 * Index of `cited` among URLs that came from a search (or were fetched), matching exactly or by
 * urlKey (the same page); -1 when it is not one of them. A language model's citations are checked
 * with it, so an answer can only cite what was retrieved.
 */
export function indexOfUrl(urls: readonly string[], cited: string): number {
  const c = cited.trim()
  const exact = urls.indexOf(c)
  if (exact >= 0) return exact
  const key = urlKey(c)
  return urls.findIndex((u) => urlKey(u) === key)
}

/**
 * What identifies a page, for matching and merging URLs the same way everywhere: the WHATWG form
 * (scheme and host lower-cased, default port dropped, non-ASCII percent-encoded), without the
 * fragment and trailing slashes.
 */
export function urlKey(u: string): string {
  const s = u.trim()
  try {
    const p = new URL(s)
    p.hash = ''
    return p.href.replace(/\/+$/, '')
  } catch {
    return s.replace(/\/+$/, '')
  }
}

const str = (v: unknown): string | null => (typeof v === 'string' && v.trim() !== '' ? v : null)

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", '#39': "'", nbsp: ' ' }
/** Brave may still mark up snippets; the answer carries plain text */
function plain(s: string): string {
  return (
    s
      .replace(/<[^>]{0,200}>/g, '')
      // Brave escapes quotes and apostrophes numerically too (&#x27;, &#39;)
      .replace(
        /&(amp|lt|gt|quot|apos|nbsp|#\d{1,7}|#[xX][0-9a-fA-F]{1,6});/g,
        (whole, n: string) => ENTITIES[n] ?? codePoint(n) ?? whole,
      )
      .trim()
  )
}

function codePoint(n: string): string | undefined {
  if (!n.startsWith('#')) return undefined
  const cp = /^#[xX]/.test(n) ? parseInt(n.slice(2), 16) : parseInt(n.slice(1), 10)
  return cp > 0 && cp <= 0x10ffff && !(cp >= 0xd800 && cp <= 0xdfff) ? String.fromCodePoint(cp) : undefined
}

function hostOf(u: string): string | null {
  try {
    return new URL(u).hostname
  } catch {
    return null
  }
}

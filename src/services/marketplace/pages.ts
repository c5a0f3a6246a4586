// Rendering of the marketplace's read endpoints from one snapshot: the entry list (paged, with an
// LRU page cache per snapshot), endpoint search, the x402 Bazaar search and discovery shapes.
import { createHash } from 'node:crypto'
import type { EndpointSearchQuery } from './endpoint-search.js'
import type { IndexedEndpoint } from './endpoint-listing.js'
import type { IndexedEntry, NetworkView, Snapshot } from './snapshot.js'
import { networkOfCaip2, type FilterNetwork, type MarketplaceFilters } from './types.js'

/** Default page when `limit` is absent: catalogs up to this size come back whole. */
const DEFAULT_PAGE = 100
export const MAX_PAGE = 1000
/** Rendered pages kept per snapshot (LRU by total body size), so a repeated query costs a lookup. */
const PAGE_CACHE_BYTES = 32 * 1024 * 1024
/** Endpoint search pages kept per snapshot (a page is at most 100 endpoints) */
const SEARCH_CACHE_PAGES = 2000

export interface ListQuery extends MarketplaceFilters {
  limit?: number
  /** the decoded cursor: the sort key of the last entry of the previous page */
  cursor?: string
}

export interface ListPage {
  /** the JSON array, encoded once (a cached page is sent without re-encoding) */
  body: Buffer
  total: number
  nextCursor: string | undefined
}

export interface SearchPage {
  total: number
  nextCursor: string | undefined
  body: string
}

/** Rendered pages of the list and endpoint search, cached per snapshot. */
export class PageCache {
  // a new snapshot starts with an empty cache, so nothing stale can be served from it
  private readonly pages = new WeakMap<Snapshot, { byKey: Map<string, ListPage>; bytes: number }>()
  private readonly searches = new WeakMap<Snapshot, Map<string, SearchPage>>()

  list(snap: Snapshot, q: ListQuery, network: FilterNetwork): ListPage {
    const key = JSON.stringify([network, q.source, q.category, q.search, q.limit, q.cursor])
    let cache = this.pages.get(snap)
    if (!cache) this.pages.set(snap, (cache = { byKey: new Map(), bytes: 0 }))
    const hit = cache.byKey.get(key)
    if (hit) {
      // most recently used goes last
      cache.byKey.delete(key)
      cache.byKey.set(key, hit)
      return hit
    }
    const page = renderPage(snap, q, network)
    cache.byKey.set(key, page)
    cache.bytes += page.body.length
    for (const [k, old] of cache.byKey) {
      if (cache.bytes <= PAGE_CACHE_BYTES || k === key) break
      cache.byKey.delete(k)
      cache.bytes -= old.body.length
    }
    return page
  }

  /**
   * `GET /api/v1/endpoints`: one page of the endpoints on `network` matching the words and filters,
   * best first, each with its score.
   */
  searchEndpoints(snap: Snapshot, q: EndpointSearchQuery, network: FilterNetwork): SearchPage {
    const key = JSON.stringify([network, { ...q, maxPrice: q.maxPrice?.toString() }])
    let cache = this.searches.get(snap)
    if (!cache) this.searches.set(snap, (cache = new Map()))
    const hit = cache.get(key)
    if (hit) return hit
    const page = snap.views[network].endpoints.search(q)
    const items = page.hits.map((h) => `{"score":${h.score},${h.endpoint.json.slice(1)}`)
    const rendered = {
      total: page.total,
      nextCursor: page.nextCursor,
      body: `{"items":[${items.join(',')}],"total":${page.total},"nextCursor":${JSON.stringify(page.nextCursor ?? null)}}`,
    }
    // a repeated query costs a lookup; the oldest of SEARCH_CACHE_PAGES goes first
    if (cache.size >= SEARCH_CACHE_PAGES) cache.delete(cache.keys().next().value!)
    cache.set(key, rendered)
    return rendered
  }
}

/** A strong ETag for one response: the snapshot's content hash plus the normalized request. */
export function etag(snap: Snapshot, kind: string, parts: unknown[]): string {
  const h = createHash('sha1')
    .update(`${snap.hash}\u0000${kind}\u0000${JSON.stringify(parts)}`)
    .digest('base64url')
  return `"${h.slice(0, 22)}"`
}

/**
 * `GET /discovery/search` in the x402 Bazaar shape (`SearchDiscoveryResourcesResponse`): the
 * x402-payable endpoints matching the words, best first. `network` (CAIP-2) picks the view,
 * `ownNetwork` (the deployment's) by default; a network, type or extension this platform has none
 * of finds nothing.
 */
export function bazaarSearch(
  snap: Snapshot,
  q: EndpointSearchQuery & { type?: string; payTo?: string; extensions?: string },
  ownNetwork: FilterNetwork,
): string {
  const network = q.network === undefined ? ownNetwork : networkOfCaip2(q.network)
  const none = network === undefined || (q.type !== undefined && q.type !== 'http') || q.extensions !== undefined
  const page = none
    ? { hits: [], nextCursor: undefined }
    : snap.views[network].endpoints.search({
        ...q,
        where: (e: IndexedEndpoint) => e.bazaar !== undefined && (q.payTo === undefined || e.payTo === q.payTo),
      })
  const items = page.hits.map((h) => h.endpoint.bazaar!)
  const pagination = { limit: items.length, cursor: page.nextCursor ?? null }
  return `{"x402Version":2,"resources":[${items.join(',')}],"partialResults":false,"pagination":${JSON.stringify(pagination)}}`
}

/** x402 Bazaar `ListDiscoveryResourcesResponse` for the deployment's network `ownNetwork`. */
export function discovery(
  snap: Snapshot,
  q: { type?: string; limit: number; offset: number },
  ownNetwork: FilterNetwork,
): string {
  const all = q.type === undefined || q.type === 'http' ? snap.views[ownNetwork].discovery : []
  const items = all.slice(q.offset, q.offset + q.limit)
  return `{"x402Version":2,"items":[${items.join(',')}],"pagination":${JSON.stringify({ limit: q.limit, offset: q.offset, total: all.length })}}`
}

/** Filters, searches and pages one view; `list` caches what this returns. */
export function renderPage(snap: Snapshot, q: ListQuery, network: FilterNetwork): ListPage {
  const view = snap.views[network]
  const candidates = q.search === undefined ? view.entries : searchView(view, q.search.toLowerCase())
  const filtered =
    q.source || q.category
      ? candidates.filter((e) => (!q.source || e.source === q.source) && (!q.category || e.category === q.category))
      : candidates
  const start = q.cursor === undefined ? 0 : firstAfter(filtered, q.cursor)
  const limit = q.limit ?? DEFAULT_PAGE
  const page = filtered.slice(start, start + limit)
  const more = start + limit < filtered.length
  let body = '['
  for (let i = 0; i < page.length; i++) body += (i ? ',' : '') + page[i].json
  body += ']'
  return {
    body: Buffer.from(body),
    total: filtered.length,
    nextCursor: more && page.length ? encodeCursor(page[page.length - 1].key) : undefined,
  }
}

/** Entries whose haystack contains `needle`, in view order: indexOf over one string, then skip to the next entry. */
function searchView(view: NetworkView, needle: string): IndexedEntry[] {
  // the separators never match; a needle holding them matches nothing
  if (needle.includes('\u0000') || needle.includes('\u0001')) return []
  const out: IndexedEntry[] = []
  const { searchText, offsets, entries } = view
  let from = 0
  for (;;) {
    const at = searchText.indexOf(needle, from)
    if (at < 0) return out
    let lo = 0
    let hi = offsets.length - 1
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1
      if (offsets[mid] <= at) lo = mid
      else hi = mid - 1
    }
    out.push(entries[lo])
    if (lo + 1 >= offsets.length) return out
    from = offsets[lo + 1]
  }
}

function encodeCursor(key: string): string {
  return Buffer.from(key, 'utf8').toString('base64url')
}

/** The key inside a cursor, or undefined when it is not one of ours. */
export function decodeCursor(cursor: string): string | undefined {
  if (!/^[A-Za-z0-9_-]{1,2000}$/.test(cursor)) return undefined
  const key = Buffer.from(cursor, 'base64url').toString('utf8')
  return key.includes('\u0000') ? key : undefined
}

/** Index of the first entry whose key sorts after `key` (entries are sorted by key). */
function firstAfter(entries: IndexedEntry[], key: string): number {
  let lo = 0
  let hi = entries.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (entries[mid].key <= key) lo = mid + 1
    else hi = mid
  }
  return lo
}

import { createHash } from 'node:crypto'
import { sql } from 'kysely'
import type { Deps } from '../../deps.js'
import { registryChannel } from '../registry-events.js'
import type { EndpointSearchQuery } from './endpoint-search.js'
import type { IndexedEndpoint } from './endpoint-listing.js'
import { loadEntries } from './load-entries.js'
import { buildSnapshot, type IndexedEntry, type NetworkView, type Snapshot } from './snapshot.js'
import { networkOfCaip2, type FilterNetwork, type MarketplaceFilters } from './types.js'
import { duplicateClient } from '../../redis-client.js'

/** Pub/sub channel for changes to catalog and bazaar entries (the registry has its own). */
export function marketplaceChannel(deps: Pick<Deps, 'key'>): string {
  return deps.key('marketplace', 'changed')
}

/** Tell every process that curated entries changed. Call after the commit. */
export async function announceMarketplaceChange(
  deps: Pick<Deps, 'key' | 'redis'>,
  what: Record<string, unknown> = {},
): Promise<void> {
  await deps.redis.publish(marketplaceChannel(deps), JSON.stringify({ at: Date.now(), ...what }))
}

/** Default page when `limit` is absent: catalogs up to this size come back whole. */
export const DEFAULT_PAGE = 100
export const MAX_PAGE = 1000
/** Rendered pages kept per snapshot (LRU by total body size), so a repeated query costs a lookup. */
export const PAGE_CACHE_BYTES = 32 * 1024 * 1024
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

export interface MarketplaceOptions {
  /**
   * Safety net for lost pub/sub messages: a snapshot older than this has its database fingerprint
   * (row counts and latest updated_at of the six tables) compared, and is rebuilt only if it moved.
   */
  checkAfterMs?: number
  /** after a change, how long a request waits for the new snapshot before the previous one is served */
  maxWaitMs?: number
}

export type Marketplace = ReturnType<typeof createMarketplace>

/**
 * The marketplace read model: an in-memory snapshot of every listed entry, rebuilt once after a
 * change is announced on the registry or marketplace channel (any process), never per request.
 *
 * @example
 *   const market = createMarketplace(deps); await market.start()
 *   const page = market.list(await market.snapshot(), { source: 'catalog', network: 'base' })
 */
export function createMarketplace(deps: Pick<Deps, 'db' | 'redis' | 'config' | 'key'>, opts: MarketplaceOptions = {}) {
  const checkAfterMs = opts.checkAfterMs ?? 30_000
  let checking = false
  const maxWaitMs = opts.maxWaitMs ?? 500
  let current: Snapshot | undefined
  let generation = 0
  let builtGeneration = -1
  let building: Promise<Snapshot> | undefined
  let subscriber: ReturnType<Deps['redis']['duplicate']> | undefined
  // a new snapshot starts with an empty cache, so nothing stale can be served from it
  const pages = new WeakMap<Snapshot, { byKey: Map<string, ListPage>; bytes: number }>()
  const searches = new WeakMap<Snapshot, Map<string, { total: number; nextCursor: string | undefined; body: string }>>()

  function invalidate(): void {
    generation++
  }

  function refresh(): Promise<Snapshot> {
    if (!building) {
      const gen = generation
      // fingerprint first: a change landing during the load then shows up at the next recheck
      building = fingerprint(deps)
        .then(async (fp) => {
          const loaded = await loadEntries(deps)
          current = { ...buildSnapshot(loaded, deps.config), fingerprint: fp }
          builtGeneration = gen
          return current
        })
        .finally(() => {
          building = undefined
        })
    }
    // a change announced while building needs one more build
    return building.then((s) => (builtGeneration === generation ? s : refresh()))
  }

  async function recheck(snap: Snapshot & { fingerprint?: string }): Promise<void> {
    checking = true
    try {
      const fp = await fingerprint(deps)
      snap.checkedAt = Date.now()
      if (fp !== snap.fingerprint) invalidate()
    } catch {
      // the database is unreachable: keep serving, try again later
    } finally {
      checking = false
    }
  }

  return {
    invalidate,

    /** Subscribe to change announcements on a dedicated connection. */
    async start(): Promise<void> {
      if (subscriber) return
      const sub = duplicateClient(deps.redis)
      subscriber = sub
      sub.on('error', () => {})
      sub.on('message', invalidate)
      // Redis may be down at start: subscribe again whenever the connection comes (back) up;
      // messages may have been missed meanwhile, so invalidate too
      const subscribe = () => sub.subscribe(registryChannel(deps), marketplaceChannel(deps)).catch(() => {})
      sub.on('ready', () => {
        void subscribe()
        invalidate()
      })
      await subscribe()
    },

    async close(): Promise<void> {
      const sub = subscriber
      subscriber = undefined
      if (sub) await sub.quit().catch(() => sub.disconnect())
    },

    /** The current snapshot; waits for a rebuild after a change, so changes show at once. */
    async snapshot(): Promise<Snapshot> {
      if (current && builtGeneration === generation) {
        if (Date.now() - current.checkedAt > checkAfterMs && !building && !checking) void recheck(current)
        return current
      }
      try {
        const next = refresh()
        if (!current) return await next
        // a big catalog takes a while to rebuild: wait a bounded time, then serve the previous one
        const stale = current
        let timer: NodeJS.Timeout | undefined
        const late = new Promise<Snapshot>((resolve) => (timer = setTimeout(() => resolve(stale), maxWaitMs)))
        next.catch(() => {})
        return await Promise.race([next, late]).finally(() => clearTimeout(timer))
      } catch (err) {
        // the database is down: a stale catalogue beats none
        if (current) return current
        throw err
      }
    },

    /** A strong ETag for one response: the snapshot's content hash plus the normalized request. */
    etag(snap: Snapshot, kind: string, parts: unknown[]): string {
      const h = createHash('sha1')
        .update(`${snap.hash}\u0000${kind}\u0000${JSON.stringify(parts)}`)
        .digest('base64url')
      return `"${h.slice(0, 22)}"`
    },

    list(snap: Snapshot, q: ListQuery, network: FilterNetwork): ListPage {
      const key = JSON.stringify([network, q.source, q.category, q.search, q.limit, q.cursor])
      let cache = pages.get(snap)
      if (!cache) pages.set(snap, (cache = { byKey: new Map(), bytes: 0 }))
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
    },

    /** the same page without the cache (tests compare the two) */
    renderPage,

    searchEndpoints,

    bazaarSearch,

    get(snap: Snapshot, id: string, network: FilterNetwork): string | undefined {
      return snap.views[network].byId.get(id)?.json
    },

    /** x402 Bazaar `ListDiscoveryResourcesResponse` for this deployment's network. */
    discovery(snap: Snapshot, q: { type?: string; limit: number; offset: number }): string {
      const all = q.type === undefined || q.type === 'http' ? snap.views[deps.config.chain.network].discovery : []
      const items = all.slice(q.offset, q.offset + q.limit)
      return `{"x402Version":2,"items":[${items.join(',')}],"pagination":${JSON.stringify({ limit: q.limit, offset: q.offset, total: all.length })}}`
    },
  }

  /**
   * `GET /api/v1/endpoints`: one page of the endpoints on `network` matching the words and filters,
   * best first, each with its score.
   */
  function searchEndpoints(snap: Snapshot, q: EndpointSearchQuery, network: FilterNetwork) {
    const key = JSON.stringify([network, { ...q, maxPrice: q.maxPrice?.toString() }])
    let cache = searches.get(snap)
    if (!cache) searches.set(snap, (cache = new Map()))
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

  /**
   * `GET /discovery/search` in the x402 Bazaar shape (`SearchDiscoveryResourcesResponse`): the
   * x402-payable endpoints matching the words, best first. `network` (CAIP-2) picks the view, the
   * deployment's by default; a network, type or extension this platform has none of finds nothing.
   */
  function bazaarSearch(
    snap: Snapshot,
    q: EndpointSearchQuery & { type?: string; payTo?: string; extensions?: string },
  ): string {
    const network = q.network === undefined ? deps.config.chain.network : networkOfCaip2(q.network)
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

  /** Filters, searches and pages one view; `list` caches what this returns. */
  function renderPage(snap: Snapshot, q: ListQuery, network: FilterNetwork): ListPage {
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
}

/** Cheap summary of the six source tables; it moves with any insert, delete or timestamped update. */
async function fingerprint(deps: Pick<Deps, 'db'>): Promise<string> {
  const tables = [
    'sellers',
    'services',
    'endpoints',
    'curated_agents',
    'curated_agent_endpoints',
    'curated_agent_skills',
  ] as const
  const parts = tables.map(
    (t) => sql`(select count(*) || '/' || coalesce(max(updated_at)::text, '') from ${sql.table(t)})`,
  )
  const r = await sql<{ fp: string }>`select concat_ws(',', ${sql.join(parts)}) as fp`.execute(deps.db)
  return r.rows[0].fp
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

export function encodeCursor(key: string): string {
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

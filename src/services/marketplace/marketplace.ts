import type { CoreDeps as Deps } from '../../core-deps.js'
import type { EndpointSearchQuery } from './endpoint-search.js'
import { bazaarSearch, discovery, etag, PageCache, renderPage, type ListPage, type ListQuery } from './pages.js'
import type { Snapshot } from './snapshot.js'
import { marketplaceChannel, SnapshotKeeper } from './snapshot-keeper.js'
import type { FilterNetwork } from './types.js'

export { decodeCursor, MAX_PAGE, type ListPage, type ListQuery } from './pages.js'

/** Tell every process that curated entries changed. Call after the commit. */
export async function announceMarketplaceChange(
  deps: Pick<Deps, 'key' | 'redis'>,
  what: Record<string, unknown> = {},
): Promise<void> {
  await deps.redis.publish(marketplaceChannel(deps), JSON.stringify({ at: Date.now(), ...what }))
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
  const keeper = new SnapshotKeeper(deps, opts.checkAfterMs ?? 30_000, opts.maxWaitMs ?? 500)
  const cache = new PageCache()

  return {
    invalidate: keeper.invalidate,

    /** Subscribe to change announcements on a dedicated connection. */
    start: (): Promise<void> => keeper.start(),

    close: (): Promise<void> => keeper.close(),

    /** The current snapshot; waits for a rebuild after a change, so changes show at once. */
    snapshot: (): Promise<Snapshot> => keeper.snapshot(),

    /** A strong ETag for one response: the snapshot's content hash plus the normalized request. */
    etag,

    list: (snap: Snapshot, q: ListQuery, network: FilterNetwork): ListPage => cache.list(snap, q, network),

    /** the same page without the cache (tests compare the two) */
    renderPage,

    /** `GET /api/v1/endpoints`: one page of the endpoints on `network` matching the words and filters. */
    searchEndpoints: (snap: Snapshot, q: EndpointSearchQuery, network: FilterNetwork) =>
      cache.searchEndpoints(snap, q, network),

    /** `GET /discovery/search` in the x402 Bazaar shape; the deployment's network by default. */
    bazaarSearch: (snap: Snapshot, q: Parameters<typeof bazaarSearch>[1]): string =>
      bazaarSearch(snap, q, deps.config.chain.network),

    get(snap: Snapshot, id: string, network: FilterNetwork): string | undefined {
      return snap.views[network].byId.get(id)?.json
    },

    /** x402 Bazaar `ListDiscoveryResourcesResponse` for this deployment's network. */
    discovery: (snap: Snapshot, q: { type?: string; limit: number; offset: number }): string =>
      discovery(snap, q, deps.config.chain.network),
  }
}

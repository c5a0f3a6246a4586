/**
 * Read-only client for the Tollgate agent marketplace (no API key, no session).
 * Imported as `tollgate/marketplace`; runs anywhere `fetch` does (Node 20+, browsers, workers).
 *
 * @example
 *   import { createMarketplaceClient, MarketplaceNotFoundError } from 'tollgate/marketplace'
 *   const market = createMarketplaceClient({ baseUrl: 'https://sandbox.api.tollgate.example' })
 *   const agents = await market.listAgents({ category: 'Crypto', search: 'risk' })
 *   const one = await market.getAgent(agents[0].id)
 */
import type { EndpointListingDTO } from './services/marketplace/endpoint-listing.js'
import type { CuratedAgentDTO, CuratedAgentSource, FilterNetwork } from './services/marketplace/types.js'

export type {
  CuratedAgentDTO,
  CuratedAgentEndpointDTO,
  CuratedAgentSkillDTO,
  CuratedAgentSource,
  EndpointMethod,
  FilterNetwork,
  PricingConfig,
} from './services/marketplace/types.js'
export type { EndpointListingDTO } from './services/marketplace/endpoint-listing.js'

/** The production API address (Base mainnet); pass `baseUrl` for sandbox, staging or a local server. */
export const DEFAULT_MARKETPLACE_BASE_URL = 'https://api.tollgate.example'

export interface MarketplaceClientOptions {
  /**
   * API address without the /api/v1 path. Default: the production address
   * (`DEFAULT_MARKETPLACE_BASE_URL`); pass one for sandbox, staging or a local server. The library
   * reads no environment (the CLI passes its `TOLLGATE_API_URL` here).
   */
  baseUrl?: string
  /** a fetch implementation (defaults to the global one) */
  fetch?: typeof fetch
}

export interface ListAgentsFilters {
  source?: CuratedAgentSource
  /** exact match */
  category?: string
  /** case-insensitive substring over name, description, category and tags */
  search?: string
  /** overrides the deployment's default network */
  network?: FilterNetwork
}

export interface SearchEndpointsFilters {
  /** words; the best matches come first (slug and name above tags and inputs, above the description) */
  search?: string
  /** the seller's namespace (`tollgate` for the hosted endpoints) */
  namespace?: string
  /** in USDC, inclusive: "0.01" */
  maxPrice?: string
  /** an x402 scheme the endpoint offers: exact, deferred */
  scheme?: string
  /** an HTTP method it takes */
  method?: string
  /** overrides the deployment's default network */
  network?: FilterNetwork
  /** list the made-up "(example)" catalog listings too (their URLs do not resolve) */
  includeExamples?: boolean
  /** per page, 1 to 100 (default 20) */
  limit?: number
  /** `nextCursor` of the previous page */
  cursor?: string
}

/** One page of endpoints, best first, each with its score. */
export interface EndpointSearchPage {
  items: Array<EndpointListingDTO & { score: number }>
  total: number
  nextCursor: string | null
}

export interface ListAgentsOptions {
  /** entries per request while paging (the server's default page is 100, its maximum 1000) */
  pageSize?: number
  /** stop after this many entries */
  max?: number
  signal?: AbortSignal
}

/** Any non-2xx answer other than 404 from get; carries the standard error body. */
export class MarketplaceError extends Error {
  constructor(
    readonly status: number,
    readonly code: string | undefined,
    message: string,
    readonly body?: unknown,
  ) {
    super(message)
    this.name = 'MarketplaceError'
  }
}

/** getAgent on an id that no listed entry has. */
export class MarketplaceNotFoundError extends MarketplaceError {
  constructor(
    readonly id: string,
    body?: unknown,
  ) {
    super(404, 'not_found', `marketplace entry ${id} not found`, body)
    this.name = 'MarketplaceNotFoundError'
  }
}

export interface MarketplaceClient {
  readonly baseUrl: string
  /** Every matching entry; follows the server's pages (see `max`, `pageSize`). */
  listAgents(filters?: ListAgentsFilters, opts?: ListAgentsOptions): Promise<CuratedAgentDTO[]>
  /**
   * One entry with its endpoints on the network (the deployment's, or `network`) and its skills;
   * an entry with nothing on that network comes back with no endpoints. Throws
   * MarketplaceNotFoundError on 404 (no listed entry has the id).
   */
  getAgent(id: string, opts?: { network?: FilterNetwork; signal?: AbortSignal }): Promise<CuratedAgentDTO>
  /** One page of the endpoints (of every entry) matching the words and filters, best first. */
  searchEndpoints(filters?: SearchEndpointsFilters, opts?: { signal?: AbortSignal }): Promise<EndpointSearchPage>
}

export function createMarketplaceClient(opts: MarketplaceClientOptions = {}): MarketplaceClient {
  const baseUrl = (opts.baseUrl ?? DEFAULT_MARKETPLACE_BASE_URL).replace(/\/+$/, '')
  const doFetch = opts.fetch ?? globalThis.fetch

  async function request(path: string, signal?: AbortSignal): Promise<{ res: Response; body: unknown }> {
    const res = await doFetch(`${baseUrl}${path}`, { headers: { accept: 'application/json' }, signal })
    const text = await res.text()
    let body: unknown = undefined
    try {
      body = text ? JSON.parse(text) : undefined
    } catch {
      body = text
    }
    return { res, body }
  }

  function fail(res: Response, body: unknown): never {
    const b = (body ?? {}) as { code?: string; message?: string }
    throw new MarketplaceError(res.status, b.code, b.message ?? `marketplace request failed with ${res.status}`, body)
  }

  return {
    baseUrl,
    async listAgents(filters = {}, o = {}) {
      const out: CuratedAgentDTO[] = []
      const params = new URLSearchParams()
      for (const k of ['source', 'category', 'search', 'network'] as const)
        if (filters[k] !== undefined) params.set(k, filters[k]!)
      if (o.pageSize !== undefined) params.set('limit', String(o.pageSize))
      for (;;) {
        const { res, body } = await request(`/api/v1/agents/marketplace${params.size ? `?${params}` : ''}`, o.signal)
        if (!res.ok) fail(res, body)
        out.push(...(body as CuratedAgentDTO[]))
        const next = res.headers.get('x-next-cursor')
        if (!next || (o.max !== undefined && out.length >= o.max)) break
        params.set('cursor', next)
      }
      return o.max !== undefined ? out.slice(0, o.max) : out
    },
    async getAgent(id, o = {}) {
      const qs = o.network ? `?network=${encodeURIComponent(o.network)}` : ''
      const { res, body } = await request(`/api/v1/agents/marketplace/${encodeURIComponent(id)}${qs}`, o.signal)
      if (res.status === 404) throw new MarketplaceNotFoundError(id, body)
      if (!res.ok) fail(res, body)
      return body as CuratedAgentDTO
    },
    async searchEndpoints(filters = {}, o = {}) {
      const params = new URLSearchParams()
      for (const [k, v] of Object.entries(filters)) if (v !== undefined) params.set(k, String(v))
      const { res, body } = await request(`/api/v1/endpoints${params.size ? `?${params}` : ''}`, o.signal)
      if (!res.ok) fail(res, body)
      return body as EndpointSearchPage
    },
  }
}

import { formatUsdc } from '../../x402/usdc-amount.js'
import type { SearchableEndpoint } from './endpoint-search.js'
import type { PlatformEndpointInfo } from './load-entries.js'
import type { CuratedAgentDTO, CuratedAgentEndpointDTO, CuratedAgentSource } from './types.js'

/** One endpoint in the search index, with what the search routes send pre-serialized. */
export interface IndexedEndpoint extends SearchableEndpoint {
  entryId: string
  source: CuratedAgentSource
  /** lower-case; null when the listing names none */
  payTo: string | null
  /** the `GET /api/v1/endpoints` item without its score, as JSON */
  json: string
  /** the x402 Bazaar discovery item as JSON; undefined when the endpoint takes no x402 payment here */
  bazaar: string | undefined
}

/** The endpoint as `GET /api/v1/endpoints` lists it (`score` is added per query). */
export interface EndpointListingDTO {
  id: string
  url: string
  namespace: string | null
  service: string
  slug: string
  /** the marketplace entry it belongs to */
  entry: { id: string; name: string; source: CuratedAgentSource; category: string }
  description: string | null
  methods: string[]
  price: { amount: string; usdc: string | null; currency: string; network: string; asset: string }
  schemes: string[]
  tags: string[]
  inputFields: string[]
  /** a made-up listing: its URL does not resolve, never call it */
  example: boolean
  /** platform endpoints are also a tool of their service's MCP server */
  mcp: { server: string; tool: string } | null
  /** …and a skill of their service's A2A agent (x402 over A2A): its Agent Card and the skill */
  a2a: { agent_card: string; skill: string } | null
}

/** The last path segment of a URL, for endpoints that have no slug of their own. */
function lastSegment(url: string): string {
  const parts = URL.parse(url)?.pathname.split('/').filter(Boolean) ?? []
  return parts.at(-1) ?? ''
}

/** Build the index record of one endpoint of one entry. */
export function indexedEndpoint(
  entry: CuratedAgentDTO,
  ep: CuratedAgentEndpointDTO,
  info: PlatformEndpointInfo | undefined,
  example: boolean,
  bazaar: string | undefined,
): IndexedEndpoint {
  const pc = ep.pricing_config
  const slug = info?.slug ?? lastSegment(ep.url)
  const service = info?.service ?? entry.name
  const namespace = info?.namespace ?? null
  const usdc = pc.currency.toUpperCase() === 'USDC'
  const dto: EndpointListingDTO = {
    id: ep.id,
    url: ep.url,
    namespace,
    service,
    slug,
    entry: { id: entry.id, name: entry.name, source: entry.source, category: entry.category },
    description: ep.description ?? entry.description,
    methods: ep.methods,
    price: {
      amount: pc.amountAtomicUnit,
      usdc: usdc ? formatUsdc(pc.amountAtomicUnit) : null,
      currency: pc.currency,
      network: pc.networkCaip2ID,
      asset: pc.assetAddress,
    },
    schemes: ep.schemes,
    tags: entry.tags,
    inputFields: info?.inputFields ?? [],
    example,
    mcp: info ? { server: `${new URL(ep.url).origin}/${namespace}/${service}/mcp`, tool: slug } : null,
    a2a: info
      ? { agent_card: `${new URL(ep.url).origin}/${namespace}/${service}/a2a/.well-known/agent-card.json`, skill: slug }
      : null,
  }
  return {
    id: ep.id,
    url: ep.url,
    namespace,
    service,
    slug,
    name: entry.name,
    description: [ep.description ?? '', entry.description ?? '', entry.category].join(' '),
    tags: entry.tags,
    inputFields: dto.inputFields,
    price: /^[0-9]{1,78}$/.test(pc.amountAtomicUnit) ? BigInt(pc.amountAtomicUnit) : 2n ** 256n,
    schemes: ep.schemes,
    network: pc.networkCaip2ID,
    methods: ep.methods,
    example,
    entryId: entry.id,
    source: entry.source,
    payTo: pc.payTo?.toLowerCase() ?? null,
    json: JSON.stringify(dto),
    bazaar,
  }
}

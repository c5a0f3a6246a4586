/**
 * The marketplace wire types, field for field as the platform spec (sections 2.2–2.5).
 * Timestamps are epoch milliseconds; `amount` and `amountAtomicUnit` are bigints sent as decimal strings.
 */

export const SOURCES = ['catalog', 'bazaar', 'platform'] as const
export type CuratedAgentSource = (typeof SOURCES)[number]

export const HTTP_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const
export type EndpointMethod = (typeof HTTP_METHODS)[number]

/** Networks the `network` filter accepts (the two Base deployments). */
export const FILTER_NETWORKS = ['base', 'base-sepolia'] as const
export type FilterNetwork = (typeof FILTER_NETWORKS)[number]

/** The CAIP-2 id of each filter network (x402 v2 and `pricing_config.networkCaip2ID` name networks so). */
export const NETWORK_CAIP2: Readonly<Record<FilterNetwork, string>> = {
  base: 'eip155:8453',
  'base-sepolia': 'eip155:84532',
}

/** The filter network of a CAIP-2 id: eip155:8453 → base, eip155:84532 → base-sepolia; otherwise undefined. */
export function networkOfCaip2(caip2: string): FilterNetwork | undefined {
  return FILTER_NETWORKS.find((n) => NETWORK_CAIP2[n] === caip2)
}

export function isFilterNetwork(name: string): name is FilterNetwork {
  return (FILTER_NETWORKS as readonly string[]).includes(name)
}

export interface PricingConfig {
  /** price per request in atomic units, as a decimal string */
  amount: string
  /** the same price in the asset's atomic units, as a decimal string ("1000" = 0.001 USDC) */
  amountAtomicUnit: string
  currency: string
  networkCaip2ID: string
  assetAddress: string
  payTo: string | null
  x402Schema: 'exact' | 'deferred' | null
}

export interface CuratedAgentEndpointDTO {
  id: string
  curated_agent_id: string
  url: string
  methods: EndpointMethod[]
  x402_enabled: boolean
  x402_protocol_version: 1 | 2
  network: string | null
  description: string | null
  enabled: boolean
  pricing_config: PricingConfig
  /**
   * The x402 schemes the endpoint offers, `exact` first: a platform endpoint that enables the
   * deferred scheme (where an escrow is configured) lists `["exact", "deferred"]`; a catalog or
   * bazaar endpoint its one `pricing_config.x402Schema`.
   */
  schemes: string[]
  created_at: number
  updated_at: number
}

export interface CuratedAgentSkillDTO {
  id: string
  curated_agent_id: string
  name: string
  instructions: unknown
  docs_url: string | null
  skillmd_url: string | null
  created_at: number
  updated_at: number
}

export interface CuratedAgentDTO {
  id: string
  name: string
  description: string | null
  source: CuratedAgentSource
  enabled: boolean
  category: string
  tags: string[]
  url: string | null
  logo_url: string | null
  docs_url: string | null
  platform_agent_address: string | null
  endpoints: CuratedAgentEndpointDTO[]
  skills: CuratedAgentSkillDTO[]
  created_at: number
  updated_at: number
}

export interface MarketplaceFilters {
  source?: CuratedAgentSource
  category?: string
  search?: string
  network?: FilterNetwork
}

/** What the publishing API answers for a seller namespace, a service and an endpoint (row → JSON view). */
import type { Selectable } from 'kysely'
import type { EndpointsTable, ServicesTable } from '../../db/database.js'
import { publicUpstreamConfig } from './upstream-config.js'

export const SELLER_COLUMNS = ['namespace', 'display_name', 'agent_address', 'created_at'] as const

export function sellerView(r: {
  namespace: string
  display_name: string
  agent_address: string | null
  created_at: unknown
}) {
  return {
    object: 'seller' as const,
    namespace: r.namespace,
    display_name: r.display_name,
    agent_address: r.agent_address,
    created_at: iso(r.created_at),
  }
}

export function serviceView(proxyUrl: string, namespace: string, r: Selectable<ServicesTable>) {
  return {
    object: 'service' as const,
    namespace,
    name: r.name,
    /** the service as a paid MCP server (its endpoints as tools) */
    mcp_url: `${proxyUrl}/${namespace}/${r.name}/mcp`,
    display_name: r.display_name,
    description: r.description,
    pay_to: r.pay_to,
    access_minutes: r.access_minutes,
    enabled: r.enabled,
    category: r.category,
    tags: r.tags,
    website_url: r.website_url,
    docs_url: r.docs_url,
    logo_url: r.logo_url,
    created_at: iso(r.created_at),
    updated_at: iso(r.updated_at),
  }
}

export function endpointView(proxyUrl: string, namespace: string, service: string, r: Selectable<EndpointsTable>) {
  return {
    object: 'endpoint' as const,
    id: r.id,
    namespace,
    service,
    slug: r.slug,
    url: `${proxyUrl}/${namespace}/${service}/${r.slug}`,
    methods: r.methods,
    price: r.price,
    settlement_mode: r.settlement_mode,
    schemes: r.schemes,
    description: r.description,
    mime_type: r.mime_type,
    input_schema: r.input_schema ?? null,
    handler: r.handler,
    upstream_url: r.upstream_url,
    upstream: publicUpstreamConfig(r.upstream_config),
    mcp_tool: r.mcp_tool,
    access_minutes: r.access_minutes,
    enabled: r.enabled,
    created_at: iso(r.created_at),
    updated_at: iso(r.updated_at),
  }
}

/** Registry timestamps select as Date at run time (their Generated<ColumnType> type hides it). */
function iso(d: unknown): string {
  return (d as Date).toISOString()
}

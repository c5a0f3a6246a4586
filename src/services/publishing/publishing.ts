import type { A2aUpstreamBody } from './a2a-upstream.js'
import { createContext, type PublishingDeps, type SellerScope } from './context.js'
import type { EndpointBody } from './endpoint-target.js'
import type { McpUpstreamBody } from './mcp-upstream.js'
import { createEndpoint, deleteEndpoint, listEndpoints, updateEndpoint } from './ops/endpoints.js'
import {
  claimNamespace,
  listSellers,
  updateSeller,
  type ClaimNamespaceBody,
  type UpdateSellerBody,
} from './ops/sellers.js'
import {
  createService,
  deleteService,
  listServices,
  updateService,
  type CreateServiceBody,
  type UpdateServiceBody,
} from './ops/services.js'
import { testEndpoint, type TestEndpointBody } from './ops/test-endpoint.js'
import { endpointView, sellerView, serviceView } from './views.js'

export type { SellerScope } from './context.js'
export type { EndpointBody } from './endpoint-target.js'

/**
 * Seller publishing: namespaces, services (one receiver each), endpoints (hosted handler or
 * upstream origin). Every change is announced on the registry channel after its commit, so every
 * proxy reloads its table at once. Each operation is in ops/, sharing `ctx` (context.ts).
 */
export function createPublishing(deps: PublishingDeps) {
  const ctx = createContext(deps)
  const { proxyUrl } = deps.config
  return {
    claimNamespace: (who: SellerScope, body: ClaimNamespaceBody) => claimNamespace(ctx, who, body),
    listSellers: (who: SellerScope) => listSellers(ctx, who),
    getSeller: async (who: SellerScope, namespace: string) => sellerView(await ctx.seller(who, namespace)),
    /** Renames a namespace or links it to one of the owner's agents (ops/sellers.ts). */
    updateSeller: (who: SellerScope, namespace: string, body: UpdateSellerBody) =>
      updateSeller(ctx, who, namespace, body),

    createService: (who: SellerScope, namespace: string, body: CreateServiceBody) =>
      createService(ctx, who, namespace, body),
    listServices: (who: SellerScope, namespace: string) => listServices(ctx, who, namespace),
    getService: async (who: SellerScope, namespace: string, name: string) =>
      serviceView(proxyUrl, namespace, (await ctx.service(who, namespace, name)).service),
    updateService: (who: SellerScope, namespace: string, name: string, body: UpdateServiceBody) =>
      updateService(ctx, who, namespace, name, body),
    deleteService: (who: SellerScope, namespace: string, name: string) => deleteService(ctx, who, namespace, name),

    /** Publishes an endpoint; an upstream endpoint's signing secret is in the answer once (`signing_secret`). */
    createEndpoint: (who: SellerScope, namespace: string, svcName: string, body: EndpointBody) =>
      createEndpoint(ctx, who, namespace, svcName, body),
    listEndpoints: (who: SellerScope, namespace: string, svcName: string) =>
      listEndpoints(ctx, who, namespace, svcName),
    getEndpoint: async (who: SellerScope, namespace: string, svcName: string, slug: string) =>
      endpointView(proxyUrl, namespace, svcName, (await ctx.endpoint(who, namespace, svcName, slug)).endpoint),
    updateEndpoint: (who: SellerScope, namespace: string, svcName: string, slug: string, body: EndpointBody) =>
      updateEndpoint(ctx, who, namespace, svcName, slug, body),
    /**
     * Publishes the service's upstream MCP server (Streamable HTTP): each tool it lists and the body
     * prices (`tool_prices`, else `default_price`) becomes a paid endpoint, a tool of the service's
     * MCP server; again, it re-reads the server's tools. `signing_secret` is in the first answer once.
     */
    async putMcpUpstream(who: SellerScope, namespace: string, svcName: string, body: McpUpstreamBody) {
      const { service: svc } = await ctx.service(who, namespace, svcName)
      return ctx.mcpUpstreams.put({ namespace, service: svc }, body ?? {})
    },
    /**
     * Publishes the service's upstream A2A agent (its Agent Card URL): each skill the card lists and
     * the body prices (`skill_prices`, else `default_price`) becomes a paid endpoint, a skill of the
     * service's A2A agent; again, it re-reads the card. `signing_secret` is in the first answer once.
     */
    async putA2aUpstream(who: SellerScope, namespace: string, svcName: string, body: A2aUpstreamBody) {
      const { service: svc } = await ctx.service(who, namespace, svcName)
      return ctx.a2aUpstreams.put({ namespace, service: svc }, body ?? {})
    },
    /** Unpublishes: the proxy answers 404 for the path once its table reloads (immediately, via the channel). */
    deleteEndpoint: (who: SellerScope, namespace: string, svcName: string, slug: string) =>
      deleteEndpoint(ctx, who, namespace, svcName, slug),
    /** Calls the upstream once as the proxy would, without payment (ops/test-endpoint.ts). */
    testEndpoint: (who: SellerScope, namespace: string, svcName: string, slug: string, body: TestEndpointBody = {}) =>
      testEndpoint(ctx, who, namespace, svcName, slug, body),
  }
}

export type PublishingService = ReturnType<typeof createPublishing>

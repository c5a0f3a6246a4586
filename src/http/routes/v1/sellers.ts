import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { Deps } from '../../../deps.js'
import type { McpUpstreamBody } from '../../../services/publishing/mcp-upstream.js'
import type { A2aUpstreamBody } from '../../../services/publishing/a2a-upstream.js'
import { type EndpointBody, type SellerScope } from '../../../services/publishing/publishing.js'
import { authErrors, errorResponse, idempotencyHeader, list, noContent, ok } from './schemas.js'
import {
  a2aUpstreamBody,
  createEndpointBody,
  createServiceBody,
  ep,
  mcpUpstreamBody,
  ns,
  svc,
  updateEndpointBody,
  updateServiceBody,
} from './sellers-schemas.js'

type NS = { Params: { namespace: string } }
type SVC = { Params: { namespace: string; service: string } }
type EP = { Params: { namespace: string; service: string; slug: string } }

/** what each group of seller routes registers with: the app, the service, the caller's scope, the OpenAPI tags */
interface SellerRoutes {
  app: FastifyInstance
  pub: Deps['services']['publishing']
  scope: (r: FastifyRequest) => SellerScope
  tags: string[]
}

/**
 * Seller publishing: namespaces, services, endpoints, and the upstream test action. Registered twice:
 * under /v1 for the user (API key or session), and under /v1/agent for an agent key, which sees only
 * the namespaces linked to its agent.
 */
export async function sellerRoutes(
  app: FastifyInstance,
  ctx: { deps: Deps },
  opts: { scope?: (r: FastifyRequest) => SellerScope; tags?: string[] } = {},
) {
  const r: SellerRoutes = {
    app,
    pub: ctx.deps.services.publishing,
    tags: opts.tags ?? ['publishing'],
    // the caller's namespaces: the user's (API key or session) unless the plugin says otherwise (agent keys)
    scope: opts.scope ?? ((r: FastifyRequest): SellerScope => ({ userId: r.principal!.userId })),
  }
  namespaceRoutes(r)
  serviceRoutes(r)
  serviceItemRoutes(r)
  endpointRoutes(r)
  endpointItemRoutes(r)
  mcpUpstreamRoute(r)
  a2aUpstreamRoute(r)
  endpointTestRoute(r)
}

/** /sellers and /sellers/:namespace: claim, list, get, rename or link a namespace */
function namespaceRoutes({ app, pub, scope, tags }: SellerRoutes) {
  app.post<{ Body: { namespace?: unknown; display_name?: unknown } }>(
    '/sellers',
    {
      config: { idempotent: true },
      schema: {
        tags,
        summary: 'Claim a seller namespace (unique)',
        headers: idempotencyHeader,
        body: {
          type: 'object',
          required: ['namespace'],
          properties: {
            namespace: { type: 'string', description: '3-40 of a-z, 0-9, inner dashes' },
            display_name: { type: 'string' },
          },
        },
        response: { 201: ok('the seller'), 400: errorResponse, 409: errorResponse, ...authErrors },
      },
    },
    async (request, reply) => reply.code(201).send(await pub.claimNamespace(scope(request), request.body)),
  )
  app.get(
    '/sellers',
    { schema: { tags, summary: 'Your namespaces', response: { 200: list('sellers') } } },
    async (request) => ({ object: 'list', data: await pub.listSellers(scope(request)) }),
  )
  app.get<NS>(
    '/sellers/:namespace',
    { schema: { tags, summary: 'Get a namespace', params: ns, response: { 200: ok('the seller'), ...authErrors } } },
    async (request) => pub.getSeller(scope(request), request.params.namespace),
  )
  app.patch<NS & { Body: { display_name?: unknown; agent_address?: unknown } }>(
    '/sellers/:namespace',
    {
      schema: {
        tags,
        summary:
          "Rename a namespace, or link it to one of your agents (its marketplace entries then carry the agent's address as platform_agent_address)",
        params: ns,
        body: {
          type: 'object',
          properties: {
            display_name: { type: 'string' },
            agent_address: { type: ['string', 'null'], description: 'one of your agents; null unlinks' },
          },
        },
        response: { 200: ok('the seller'), 400: errorResponse, ...authErrors },
      },
    },
    async (request) => pub.updateSeller(scope(request), request.params.namespace, request.body ?? {}),
  )
}

/** …/services: create and list a namespace's services */
function serviceRoutes({ app, pub, scope, tags }: SellerRoutes) {
  app.post<NS & { Body: Record<string, unknown> }>(
    '/sellers/:namespace/services',
    {
      config: { idempotent: true },
      schema: {
        tags,
        summary: 'Create a service with its receiver (pay_to)',
        params: ns,
        headers: idempotencyHeader,
        body: createServiceBody,
        response: { 201: ok('the service'), 400: errorResponse, 409: errorResponse, ...authErrors },
      },
    },
    async (request, reply) =>
      reply.code(201).send(await pub.createService(scope(request), request.params.namespace, request.body)),
  )
  app.get<NS>(
    '/sellers/:namespace/services',
    { schema: { tags, summary: 'List services', params: ns, response: { 200: list('services'), ...authErrors } } },
    async (request) => ({
      object: 'list',
      data: await pub.listServices(scope(request), request.params.namespace),
    }),
  )
}

/** …/services/:service: get, update or delete one service */
function serviceItemRoutes({ app, pub, scope, tags }: SellerRoutes) {
  app.get<SVC>(
    '/sellers/:namespace/services/:service',
    { schema: { tags, summary: 'Get a service', params: svc, response: { 200: ok('the service'), ...authErrors } } },
    async (request) => pub.getService(scope(request), request.params.namespace, request.params.service),
  )
  app.patch<SVC & { Body: Record<string, unknown> }>(
    '/sellers/:namespace/services/:service',
    {
      schema: {
        tags,
        summary:
          'Update a service (display_name, description, pay_to, enabled, and its marketplace category, tags and links)',
        params: svc,
        body: updateServiceBody,
        response: { 200: ok('the service'), 400: errorResponse, ...authErrors },
      },
    },
    async (request) =>
      pub.updateService(scope(request), request.params.namespace, request.params.service, request.body ?? {}),
  )
  app.delete<SVC>(
    '/sellers/:namespace/services/:service',
    {
      schema: {
        tags,
        summary: 'Delete a service and its endpoints',
        params: svc,
        response: { 204: noContent, ...authErrors },
      },
    },
    async (request, reply) => {
      await pub.deleteService(scope(request), request.params.namespace, request.params.service)
      return reply.code(204).send()
    },
  )
}

/** …/endpoints: publish and list a service's endpoints */
function endpointRoutes({ app, pub, scope, tags }: SellerRoutes) {
  app.post<SVC & { Body: EndpointBody }>(
    '/sellers/:namespace/services/:service/endpoints',
    {
      config: { idempotent: true },
      schema: {
        tags,
        summary:
          'Publish an endpoint (hosted handler or upstream origin); an upstream endpoint answer carries `signing_secret` once',
        params: svc,
        headers: idempotencyHeader,
        body: createEndpointBody,
        response: { 201: ok('the endpoint'), 400: errorResponse, 409: errorResponse, ...authErrors },
      },
    },
    async (request, reply) =>
      reply
        .code(201)
        .send(await pub.createEndpoint(scope(request), request.params.namespace, request.params.service, request.body)),
  )
  app.get<SVC>(
    '/sellers/:namespace/services/:service/endpoints',
    { schema: { tags, summary: 'List endpoints', params: svc, response: { 200: list('endpoints'), ...authErrors } } },
    async (request) => ({
      object: 'list',
      data: await pub.listEndpoints(scope(request), request.params.namespace, request.params.service),
    }),
  )
}

/** …/endpoints/:slug: get, update or delete one endpoint */
function endpointItemRoutes({ app, pub, scope, tags }: SellerRoutes) {
  app.get<EP>(
    '/sellers/:namespace/services/:service/endpoints/:slug',
    { schema: { tags, summary: 'Get an endpoint', params: ep, response: { 200: ok('the endpoint'), ...authErrors } } },
    async (request) =>
      pub.getEndpoint(scope(request), request.params.namespace, request.params.service, request.params.slug),
  )
  app.patch<EP & { Body: EndpointBody }>(
    '/sellers/:namespace/services/:service/endpoints/:slug',
    {
      schema: {
        tags,
        summary: 'Update an endpoint (reprice, disable, change target or upstream options)',
        params: ep,
        body: updateEndpointBody,
        response: { 200: ok('the endpoint'), 400: errorResponse, ...authErrors },
      },
    },
    async (request) =>
      pub.updateEndpoint(
        scope(request),
        request.params.namespace,
        request.params.service,
        request.params.slug,
        request.body ?? {},
      ),
  )
  app.delete<EP>(
    '/sellers/:namespace/services/:service/endpoints/:slug',
    { schema: { tags, summary: 'Unpublish an endpoint', params: ep, response: { 204: noContent, ...authErrors } } },
    async (request, reply) => {
      await pub.deleteEndpoint(scope(request), request.params.namespace, request.params.service, request.params.slug)
      return reply.code(204).send()
    },
  )
}

/** PUT …/mcp-upstream: a seller's own MCP server, its tools priced (services/publishing/mcp-upstream.ts) */
function mcpUpstreamRoute({ app, pub, scope, tags }: SellerRoutes) {
  app.put<SVC & { Body: McpUpstreamBody }>(
    '/sellers/:namespace/services/:service/mcp-upstream',
    {
      schema: {
        tags,
        summary:
          "Publish the service's upstream MCP server: each tool it lists, priced per tool or by default, becomes a paid tool (and endpoint); the first answer carries `signing_secret` once",
        params: svc,
        body: mcpUpstreamBody,
        response: {
          200: ok(
            '{object: "mcp_upstream", url, mcp_url, tools: [{name, slug, price, endpoint_url}], unpriced, upstream, signing_secret?}',
          ),
          400: errorResponse,
          ...authErrors,
        },
      },
    },
    async (request) =>
      pub.putMcpUpstream(scope(request), request.params.namespace, request.params.service, request.body),
  )
}

/** POST …/endpoints/:slug/test: one unpaid, signed call to the upstream */
function endpointTestRoute({ app, pub, scope, tags }: SellerRoutes) {
  app.post<EP & { Body: { method?: string } }>(
    '/sellers/:namespace/services/:service/endpoints/:slug/test',
    {
      schema: {
        tags,
        summary: 'Call the upstream once (unpaid, signed, with forwarded headers) and report status and latency',
        params: ep,
        body: { type: 'object', properties: { method: { type: 'string' } } },
        response: {
          200: ok('{object: "upstream_test", ok, status, latency_ms, error}'),
          400: errorResponse,
          ...authErrors,
        },
      },
    },
    async (request) =>
      pub.testEndpoint(
        scope(request),
        request.params.namespace,
        request.params.service,
        request.params.slug,
        request.body ?? {},
      ),
  )
}

/** PUT …/a2a-upstream: a seller's own A2A agent, its skills priced (services/publishing/a2a-upstream.ts). */
function a2aUpstreamRoute({ app, pub, scope, tags }: SellerRoutes) {
  app.put<SVC & { Body: A2aUpstreamBody }>(
    '/sellers/:namespace/services/:service/a2a-upstream',
    {
      schema: {
        tags,
        summary:
          "Publish the service's upstream A2A agent: each skill its Agent Card lists, priced per skill or by default, becomes a paid skill (and endpoint); the first answer carries `signing_secret` once",
        params: svc,
        body: a2aUpstreamBody,
        response: {
          200: ok(
            '{object: "a2a_upstream", card_url, a2a_url, agent_card_url, skills: [{id, slug, price, endpoint_url}], unpriced, upstream, signing_secret?}',
          ),
          400: errorResponse,
          ...authErrors,
        },
      },
    },
    async (request) =>
      pub.putA2aUpstream(scope(request), request.params.namespace, request.params.service, request.body),
  )
}

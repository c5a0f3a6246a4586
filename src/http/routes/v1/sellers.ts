import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { Deps } from '../../../deps.js'
import type { McpUpstreamBody } from '../../../services/publishing/mcp-upstream.js'
import type { A2aUpstreamBody } from '../../../services/publishing/a2a-upstream.js'
import { type EndpointBody, type SellerScope } from '../../../services/publishing/publishing.js'
import { atomic, authErrors, errorResponse, idempotencyHeader, list, noContent, ok } from './schemas.js'

const ns = { type: 'object', properties: { namespace: { type: 'string' } } } as const
const svc = { type: 'object', properties: { namespace: { type: 'string' }, service: { type: 'string' } } } as const
const ep = {
  type: 'object',
  properties: { namespace: { type: 'string' }, service: { type: 'string' }, slug: { type: 'string' } },
} as const
const upstream = {
  type: 'object',
  additionalProperties: false,
  properties: {
    forward_headers: {
      type: 'object',
      additionalProperties: { type: 'string' },
      description: 'added to every forwarded request (e.g. your upstream API key); stored encrypted, never shown again',
    },
    required_headers: { type: 'array', items: { type: 'string' }, description: 'headers a caller must send' },
    timeout_ms: { type: 'integer', minimum: 100, maximum: 60000 },
    rate_limit: {
      anyOf: [
        { type: 'null' },
        { type: 'object', properties: { requests: { type: 'integer' }, per_seconds: { type: 'integer' } } },
      ],
    },
  },
} as const
const accessMinutes = {
  type: ['integer', 'null'],
  minimum: 1,
  maximum: 525600,
  description:
    'x402 sign-in-with-x: a paid call gives its payer this many minutes of access, during which it signs in with the same wallet instead of paying again; null (default): off',
} as const
const endpointProps = {
  methods: { type: 'array', items: { type: 'string' } },
  price: atomic,
  description: { type: 'string' },
  mime_type: { type: 'string' },
  input_schema: { anyOf: [{ type: 'object' }, { type: 'null' }] },
  settlement_mode: { type: 'string', enum: ['async', 'sync'] },
  schemes: {
    type: 'array',
    items: { type: 'string' },
    maxItems: 8,
    description: 'payment schemes offered in the v2 challenge besides exact, which is always offered',
  },
  handler: {
    anyOf: [{ type: 'string' }, { type: 'null' }],
    description: 'a hosted handler name; or give upstream_url',
  },
  upstream_url: {
    anyOf: [{ type: 'string' }, { type: 'null' }],
    description: 'your origin; Tollgate forwards paid calls with an HMAC signature (X-Tollgate-Signature)',
  },
  upstream,
  access_minutes: accessMinutes,
  enabled: { type: 'boolean' },
} as const

// how a service appears in the marketplace (its platform entry)
const listingProps = {
  category: { type: 'string', description: 'marketplace category, e.g. Crypto (default Other)' },
  tags: { type: ['array', 'null'], items: { type: 'string' }, description: 'marketplace search tags (at most 20)' },
  website_url: { type: ['string', 'null'] },
  docs_url: { type: ['string', 'null'] },
  logo_url: { type: ['string', 'null'] },
} as const

type NS = { Params: { namespace: string } }
type SVC = { Params: { namespace: string; service: string } }
type EP = { Params: { namespace: string; service: string; slug: string } }

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
  const pub = ctx.deps.services.publishing
  const tags = opts.tags ?? ['publishing']
  // the caller's namespaces: the user's (API key or session) unless the plugin says otherwise (agent keys)
  const scope = opts.scope ?? ((r: FastifyRequest): SellerScope => ({ userId: r.principal!.userId }))

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

  app.post<NS & { Body: Record<string, unknown> }>(
    '/sellers/:namespace/services',
    {
      config: { idempotent: true },
      schema: {
        tags,
        summary: 'Create a service with its receiver (pay_to)',
        params: ns,
        headers: idempotencyHeader,
        body: {
          type: 'object',
          required: ['name', 'pay_to'],
          properties: {
            name: { type: 'string' },
            display_name: { type: 'string' },
            description: { type: 'string' },
            pay_to: { type: 'string' },
            access_minutes: accessMinutes,
            ...listingProps,
          },
        },
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
        body: {
          type: 'object',
          properties: {
            display_name: { type: 'string' },
            description: { type: ['string', 'null'] },
            pay_to: { type: 'string' },
            enabled: { type: 'boolean' },
            access_minutes: accessMinutes,
            ...listingProps,
          },
        },
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
        body: {
          type: 'object',
          required: ['slug', 'price'],
          properties: { slug: { type: 'string' }, ...endpointProps },
        },
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
        body: { type: 'object', properties: endpointProps },
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
  app.put<SVC & { Body: McpUpstreamBody }>(
    '/sellers/:namespace/services/:service/mcp-upstream',
    {
      schema: {
        tags,
        summary:
          "Publish the service's upstream MCP server: each tool it lists, priced per tool or by default, becomes a paid tool (and endpoint); the first answer carries `signing_secret` once",
        params: svc,
        body: {
          type: 'object',
          required: ['url'],
          additionalProperties: false,
          properties: {
            url: {
              type: 'string',
              description:
                'your MCP server (Streamable HTTP); Tollgate forwards paid tool calls with an HMAC signature (X-Tollgate-Signature) on every request',
            },
            tool_prices: {
              type: 'object',
              additionalProperties: atomic,
              description: 'tool name → price in atomic units',
            },
            default_price: {
              anyOf: [{ type: 'null' }, atomic],
              description: 'the price of a tool not in tool_prices; without it such tools are not published',
            },
            upstream,
          },
        },
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
  a2aUpstreamRoute(app, pub, scope, tags)
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
function a2aUpstreamRoute(
  app: FastifyInstance,
  pub: Deps['services']['publishing'],
  scope: (r: FastifyRequest) => SellerScope,
  tags: string[],
) {
  app.put<SVC & { Body: A2aUpstreamBody }>(
    '/sellers/:namespace/services/:service/a2a-upstream',
    {
      schema: {
        tags,
        summary:
          "Publish the service's upstream A2A agent: each skill its Agent Card lists, priced per skill or by default, becomes a paid skill (and endpoint); the first answer carries `signing_secret` once",
        params: svc,
        body: {
          type: 'object',
          required: ['card_url'],
          additionalProperties: false,
          properties: {
            card_url: {
              type: 'string',
              description:
                "your agent's Agent Card URL (A2A v1.0 or v0.3, JSON-RPC); Tollgate sends paid messages with an HMAC signature (X-Tollgate-Signature) on every request",
            },
            skill_prices: {
              type: 'object',
              additionalProperties: atomic,
              description: 'skill id → price in atomic units',
            },
            default_price: {
              anyOf: [{ type: 'null' }, atomic],
              description: 'the price of a skill not in skill_prices; without it such skills are not published',
            },
            upstream,
          },
        },
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

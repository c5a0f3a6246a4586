import { privateKeyToAccount } from 'viem/accounts'
import { isSchemeName, SCHEME_NAMES } from '../../schemes/names.js'
import { randomUUID } from 'node:crypto'
import { sql, type Kysely, type Selectable } from 'kysely'
import { Agent, request } from 'undici'
import type { Config } from '../../config.js'
import type { Database, EndpointsTable, ServicesTable } from '../../db/database.js'
import { appError } from '../../errors.js'
import { listHandlerSlugs } from '../../pool/handler-registry.js'
import { signUpstreamRequest } from '../../proxy/upstream.js'
import { newSecret } from '../../secrets/secret-token.js'
import { address, invalid, name as parseName, slug as parseSlug } from '../accounts/validate.js'
import { validateServiceListing, type ServiceListing } from '../marketplace/validate-listing.js'
import { announceRegistryChange } from '../registry-events.js'
import { requireMasterKey } from '../../secrets/wallet-crypto.js'
import { checkUpstreamUrl, guardedLookup } from '../../net/ssrf-guard.js'
import { createMcpUpstreams, type McpUpstreamBody } from './mcp-upstream.js'
import { createA2aUpstreams, type A2aUpstreamBody } from './a2a-upstream.js'
import {
  buildUpstreamConfig,
  decodeUpstreamConfig,
  publicUpstreamConfig,
  type StoredUpstreamConfig,
  type UpstreamInput,
} from './upstream-config.js'

type Deps = {
  db: Kysely<Database>
  config: Readonly<Config>
  redis: import('../../redis-client.js').RedisClient
  key(...parts: string[]): string
}

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE']
/** Handler names follow hosted endpoint slugs (handlers/<slug>/). */
const HANDLER = /^[a-z0-9][a-z0-9-]{0,62}$/
// the hosted handlers this deployment ships (folder names only; nothing is imported)
let knownHandlers: Set<string> | undefined

export interface EndpointBody {
  slug?: unknown
  methods?: unknown
  price?: unknown
  description?: unknown
  mime_type?: unknown
  input_schema?: unknown
  settlement_mode?: unknown
  schemes?: unknown
  access_minutes?: unknown
  handler?: unknown
  upstream_url?: unknown
  upstream?: UpstreamInput
  enabled?: unknown
}

const SELLER_COLUMNS = ['namespace', 'display_name', 'agent_address', 'created_at'] as const

function sellerView(r: { namespace: string; display_name: string; agent_address: string | null; created_at: unknown }) {
  return {
    object: 'seller' as const,
    namespace: r.namespace,
    display_name: r.display_name,
    agent_address: r.agent_address,
    created_at: iso(r.created_at),
  }
}

function serviceView(proxyUrl: string, namespace: string, r: Selectable<ServicesTable>) {
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

function endpointView(proxyUrl: string, namespace: string, service: string, r: Selectable<EndpointsTable>) {
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

function parseMethods(v: unknown): string[] {
  if (!Array.isArray(v) || v.length === 0 || v.some((m) => typeof m !== 'string' || !METHODS.includes(m.toUpperCase())))
    throw invalid('methods', `expected a non-empty array of ${METHODS.join(', ')}`)
  return [...new Set(v.map((m: string) => m.toUpperCase()))]
}

function parsePrice(v: unknown): string {
  if (typeof v !== 'string' || !/^[1-9][0-9]{0,77}$/.test(v))
    throw invalid(
      'price',
      'expected a positive integer of atomic units as a decimal string, e.g. "1000" for 0.001 USDC',
    )
  return v
}

function parseInputSchema(v: unknown): string | null {
  if (v === null) return null
  if (typeof v !== 'object' || Array.isArray(v)) throw invalid('input_schema', 'expected a JSON Schema object')
  const s = JSON.stringify(v)
  if (s.length > 32_768) throw invalid('input_schema', 'at most 32 KiB')
  return s
}

/**
 * Whose namespaces a call may see and change: a user's (API key or session), or, for an agent key,
 * only the namespaces linked to that agent (the agent's own endpoints; spec 4.1's agent-scoped actions).
 */
export interface SellerScope {
  userId: string
  /** set for an agent key: the agent's address (as stored, checksummed) */
  agentAddress?: string
}

/** The marketplace fields a service body carries (category, tags, links); the first problem is the 400. */
function listingFields(body: Record<string, unknown>): ServiceListing {
  const r = validateServiceListing(body)
  if (!r.ok) throw invalid(r.problems[0]!.field, r.problems[0]!.reason)
  return r.value
}

/**
 * Seller publishing: namespaces, services (one receiver each), endpoints (hosted handler or
 * upstream origin). Every change is announced on the registry channel after its commit, so every
 * proxy reloads its table at once.
 */
export function createPublishing(deps: Deps) {
  const { db, config } = deps
  const announce = (what: Record<string, unknown>) => announceRegistryChange(deps, what).catch(() => {})
  const mcpUpstreams = createMcpUpstreams({ db, config, announce })
  const a2aUpstreams = createA2aUpstreams({ db, config, announce })
  // addresses that can never be paid out to a seller: no key holds the zero address, the token contract
  // cannot hand USDC back, and our relayers are the platform's own gas wallets
  const unpayable = new Map<string, string>([
    ['0x0000000000000000000000000000000000000000', 'the zero address, which no key holds (settlement would fail)'],
    [config.chain.usdc.address.toLowerCase(), 'the USDC token contract, which cannot hand the funds back'],
    ...config.relayerKeys.map(
      (k) =>
        [privateKeyToAccount(k).address.toLowerCase(), "one of this platform's relayers, not a seller's wallet"] as [
          string,
          string,
        ],
    ),
  ])
  /** A service's payee: a checksummed address some seller can spend from, or 400. */
  const payee = (v: unknown) => {
    const a = address('pay_to', v)
    const why = unpayable.get(a.toLowerCase())
    if (why) throw invalid('pay_to', `${a} is ${why}; name the wallet that receives the service's payments`)
    return a
  }

  /** the sellers `who` may see: the user's own, and for an agent key only those linked to the agent */
  const sellersOf = (who: SellerScope) =>
    db
      .selectFrom('sellers')
      .where('owner_user_id', '=', who.userId)
      .$if(who.agentAddress !== undefined, (q) => q.where('agent_address', '=', who.agentAddress!))

  async function seller(who: SellerScope, namespace: string) {
    const row = await sellersOf(who).selectAll().where('namespace', '=', namespace).executeTakeFirst()
    if (!row) throw appError('not_found', { what: 'seller namespace' })
    return row
  }
  async function service(who: SellerScope, namespace: string, name: string) {
    const s = await seller(who, namespace)
    const row = await db
      .selectFrom('services')
      .selectAll()
      .where('seller_id', '=', s.id)
      .where('name', '=', name)
      .executeTakeFirst()
    if (!row) throw appError('not_found', { what: 'service' })
    return { seller: s, service: row }
  }
  async function endpoint(who: SellerScope, namespace: string, svc: string, slug: string) {
    const ctx = await service(who, namespace, svc)
    const row = await db
      .selectFrom('endpoints')
      .selectAll()
      .where('service_id', '=', ctx.service.id)
      .where('slug', '=', slug)
      .executeTakeFirst()
    if (!row) throw appError('not_found', { what: 'endpoint' })
    return { ...ctx, endpoint: row }
  }

  /** Target fields of an endpoint body → columns; exactly one of handler / upstream_url. */
  function target(
    endpointId: string,
    body: EndpointBody,
    previous?: Selectable<EndpointsTable>,
  ): { handler: string | null; upstream_url: string | null; upstream_config: string | null; signingSecret?: string } {
    const wantsHandler = body.handler !== undefined && body.handler !== null
    const wantsUpstream = body.upstream_url !== undefined && body.upstream_url !== null
    if (wantsHandler && wantsUpstream) throw invalid('handler', 'give either handler or upstream_url, not both')
    if (wantsHandler) {
      if (typeof body.handler !== 'string' || !HANDLER.test(body.handler))
        throw invalid('handler', 'expected a hosted handler name')
      knownHandlers ??= new Set(listHandlerSlugs())
      // the proxy could not run it: every paid call would be refused
      if (!knownHandlers.has(body.handler))
        throw invalid(
          'handler',
          `no hosted handler is named "${body.handler}"; the names are the slugs of the platform's hosted endpoints (docs/hosted-services.md)`,
        )
      if (body.upstream !== undefined)
        throw invalid('upstream', 'upstream options apply only to upstream_url endpoints')
      return { handler: body.handler, upstream_url: null, upstream_config: null }
    }
    const url = wantsUpstream
      ? checkUpstreamUrl(body.upstream_url, config.allowPrivateUpstreams)
      : previous?.upstream_url
    if (!url) throw invalid('upstream_url', 'give a hosted handler or an upstream_url')
    const prevConfig = (previous?.upstream_config ?? undefined) as StoredUpstreamConfig | undefined
    // A new upstream endpoint gets a signing secret, shown once; updates keep it.
    const signingSecret = prevConfig ? undefined : newSecret('tgs_').secret
    const stored = buildUpstreamConfig(
      requireMasterKey(config),
      endpointId,
      body.upstream ?? {},
      signingSecret,
      prevConfig,
    )
    return { handler: null, upstream_url: url, upstream_config: JSON.stringify(stored), signingSecret }
  }

  return {
    async claimNamespace(who: SellerScope, body: { namespace?: unknown; display_name?: unknown }) {
      const namespace = parseSlug('namespace', body.namespace)
      const display = body.display_name === undefined ? namespace : parseName('display_name', body.display_name)
      const row = await db
        .insertInto('sellers')
        .values({
          namespace,
          display_name: display,
          owner_user_id: who.userId,
          agent_address: who.agentAddress ?? null,
        })
        .onConflict((oc) => oc.column('namespace').doNothing())
        .returning(SELLER_COLUMNS)
        .executeTakeFirst()
      if (!row) throw appError('conflict', { detail: `the namespace "${namespace}" is taken` })
      return sellerView(row)
    },
    async listSellers(who: SellerScope) {
      const rows = await sellersOf(who).select(SELLER_COLUMNS).orderBy('created_at').execute()
      return rows.map(sellerView)
    },
    async getSeller(who: SellerScope, namespace: string) {
      return sellerView(await seller(who, namespace))
    },
    /**
     * Renames a namespace's display name, or links it to one of the owner's agents (`agent_address`,
     * null unlinks): its marketplace entries then carry `platform_agent_address`.
     */
    async updateSeller(who: SellerScope, namespace: string, body: { display_name?: unknown; agent_address?: unknown }) {
      const s = await seller(who, namespace)
      const set: { display_name?: string; agent_address?: string | null } = {}
      if (body.display_name !== undefined) set.display_name = parseName('display_name', body.display_name)
      if (body.agent_address !== undefined && who.agentAddress !== undefined) {
        throw invalid(
          'agent_address',
          "an agent key cannot change which agent a namespace is listed as; use the owner's API key",
        )
      }
      if (body.agent_address === null) set.agent_address = null
      else if (body.agent_address !== undefined) {
        const wanted = address('agent_address', body.agent_address)
        const agent = await db
          .selectFrom('agents')
          .select('address')
          .where(sql<string>`lower(address)`, '=', wanted.toLowerCase())
          .where('user_id', '=', who.userId)
          .executeTakeFirst()
        if (!agent) throw invalid('agent_address', 'expected the address of one of your agents (GET /v1/agents)')
        set.agent_address = agent.address
      }
      if (Object.keys(set).length === 0) return sellerView(s)
      const row = await db
        .updateTable('sellers')
        .set({ ...set, updated_at: sql`now()` })
        .where('id', '=', s.id)
        .returning(SELLER_COLUMNS)
        .executeTakeFirstOrThrow()
      await announce({ namespace })
      return sellerView(row)
    },

    async createService(
      who: SellerScope,
      namespace: string,
      body: { name?: unknown; display_name?: unknown; description?: unknown; pay_to?: unknown } & Record<
        string,
        unknown
      >,
    ) {
      const s = await seller(who, namespace)
      const name = parseSlug('name', body.name)
      const payTo = payee(body.pay_to)
      const display = body.display_name === undefined ? name : parseName('display_name', body.display_name)
      if (
        body.description !== undefined &&
        body.description !== null &&
        (typeof body.description !== 'string' || body.description.length > 2000)
      )
        throw invalid('description', 'expected a string of at most 2000 characters')
      const row = await db
        .insertInto('services')
        .values({
          seller_id: s.id,
          name,
          display_name: display,
          description: (body.description as string | null | undefined) ?? null,
          pay_to: payTo,
          access_minutes: body.access_minutes === undefined ? null : parseAccessMinutes(body.access_minutes),
          ...listingFields(body),
        })
        .onConflict((oc) => oc.columns(['seller_id', 'name']).doNothing())
        .returningAll()
        .executeTakeFirst()
      if (!row) throw appError('conflict', { detail: `the service "${name}" exists in ${namespace}` })
      await announce({ namespace, service: name })
      return serviceView(config.proxyUrl, namespace, row)
    },
    async listServices(who: SellerScope, namespace: string) {
      const s = await seller(who, namespace)
      const rows = await db
        .selectFrom('services')
        .selectAll()
        .where('seller_id', '=', s.id)
        .orderBy('created_at')
        .execute()
      return rows.map((r) => serviceView(config.proxyUrl, namespace, r))
    },
    async getService(who: SellerScope, namespace: string, name: string) {
      return serviceView(config.proxyUrl, namespace, (await service(who, namespace, name)).service)
    },
    async updateService(
      who: SellerScope,
      namespace: string,
      name: string,
      body: { display_name?: unknown; description?: unknown; pay_to?: unknown; enabled?: unknown } & Record<
        string,
        unknown
      >,
    ) {
      const { service: svc } = await service(who, namespace, name)
      const set: Record<string, unknown> = { ...listingFields(body) }
      if (body.display_name !== undefined) set.display_name = parseName('display_name', body.display_name)
      if (body.description !== undefined) {
        if (body.description !== null && (typeof body.description !== 'string' || body.description.length > 2000))
          throw invalid('description', 'expected a string of at most 2000 characters')
        set.description = body.description
      }
      if (body.pay_to !== undefined) set.pay_to = payee(body.pay_to)
      if (body.access_minutes !== undefined) set.access_minutes = parseAccessMinutes(body.access_minutes)
      if (body.enabled !== undefined) {
        if (typeof body.enabled !== 'boolean') throw invalid('enabled', 'expected true or false')
        set.enabled = body.enabled
      }
      const row = await db
        .updateTable('services')
        .set({ ...set, updated_at: sql`now()` })
        .where('id', '=', svc.id)
        .returningAll()
        .executeTakeFirstOrThrow()
      await announce({ namespace, service: name })
      return serviceView(config.proxyUrl, namespace, row)
    },
    async deleteService(who: SellerScope, namespace: string, name: string) {
      const { service: svc } = await service(who, namespace, name)
      await db.deleteFrom('services').where('id', '=', svc.id).execute()
      await announce({ namespace, service: name, deleted: true })
    },

    /** Publishes an endpoint; an upstream endpoint's signing secret is in the answer once (`signing_secret`). */
    async createEndpoint(who: SellerScope, namespace: string, svcName: string, body: EndpointBody) {
      const { service: svc } = await service(who, namespace, svcName)
      const slug = parseSlug('slug', body.slug)
      // the proxy serves the service's MCP server there (src/proxy/mcp-route.ts)
      if (slug === 'mcp')
        throw invalid('slug', '"mcp" is reserved: /<namespace>/<service>/mcp is the service\'s MCP server')
      // and its A2A agent there (src/proxy/a2a-route.ts)
      if (slug === 'a2a')
        throw invalid('slug', '"a2a" is reserved: /<namespace>/<service>/a2a is the service\'s A2A agent')
      const id = randomUUID()
      const fields = {
        id,
        service_id: svc.id,
        slug,
        methods: parseMethods(body.methods ?? ['GET']),
        price: parsePrice(body.price),
        settlement_mode: parseSettlement(body.settlement_mode ?? 'async'),
        schemes: parseSchemes(body.schemes ?? ['exact']),
        access_minutes: body.access_minutes === undefined ? null : parseAccessMinutes(body.access_minutes),
        description: parseDescription(body.description ?? ''),
        mime_type: parseMime(body.mime_type ?? 'application/json'),
        input_schema: body.input_schema === undefined ? null : parseInputSchema(body.input_schema),
        enabled: body.enabled === undefined ? true : parseBool('enabled', body.enabled),
      }
      // the target last, as on update: a body with several problems names the plain fields first
      const t = target(id, body)
      const values = { ...fields, handler: t.handler, upstream_url: t.upstream_url, upstream_config: t.upstream_config }
      const row = await db
        .insertInto('endpoints')
        .values(values)
        .onConflict((oc) => oc.columns(['service_id', 'slug']).doNothing())
        .returningAll()
        .executeTakeFirst()
      if (!row) throw appError('conflict', { detail: `the endpoint "${slug}" exists in ${namespace}/${svcName}` })
      await announce({ namespace, service: svcName, slug })
      return {
        ...endpointView(config.proxyUrl, namespace, svcName, row),
        ...(t.signingSecret ? { signing_secret: t.signingSecret } : {}),
      }
    },
    async listEndpoints(who: SellerScope, namespace: string, svcName: string) {
      const { service: svc } = await service(who, namespace, svcName)
      const rows = await db
        .selectFrom('endpoints')
        .selectAll()
        .where('service_id', '=', svc.id)
        .orderBy('created_at')
        // endpoints made in one transaction (an MCP upstream's tools) share created_at
        .orderBy('slug')
        .execute()
      return rows.map((r) => endpointView(config.proxyUrl, namespace, svcName, r))
    },
    async getEndpoint(who: SellerScope, namespace: string, svcName: string, slug: string) {
      return endpointView(config.proxyUrl, namespace, svcName, (await endpoint(who, namespace, svcName, slug)).endpoint)
    },
    async updateEndpoint(who: SellerScope, namespace: string, svcName: string, slug: string, body: EndpointBody) {
      const { endpoint: e } = await endpoint(who, namespace, svcName, slug)
      if (body.slug !== undefined) throw invalid('slug', 'an endpoint slug cannot change; publish a new endpoint')
      const set: Record<string, unknown> = {}
      if (body.methods !== undefined) set.methods = parseMethods(body.methods)
      if (body.price !== undefined) set.price = parsePrice(body.price)
      if (body.settlement_mode !== undefined) set.settlement_mode = parseSettlement(body.settlement_mode)
      if (body.schemes !== undefined) set.schemes = parseSchemes(body.schemes)
      if (body.access_minutes !== undefined) set.access_minutes = parseAccessMinutes(body.access_minutes)
      if (body.description !== undefined) set.description = parseDescription(body.description)
      if (body.mime_type !== undefined) set.mime_type = parseMime(body.mime_type)
      if (body.input_schema !== undefined) set.input_schema = parseInputSchema(body.input_schema)
      if (body.enabled !== undefined) set.enabled = parseBool('enabled', body.enabled)
      let signingSecret: string | undefined
      if (body.handler !== undefined || body.upstream_url !== undefined || body.upstream !== undefined) {
        const t = target(
          e.id,
          { handler: body.handler, upstream_url: body.upstream_url, upstream: body.upstream },
          e.handler && body.upstream_url ? undefined : e,
        )
        Object.assign(set, { handler: t.handler, upstream_url: t.upstream_url, upstream_config: t.upstream_config })
        signingSecret = t.signingSecret
      }
      const row = await db
        .updateTable('endpoints')
        .set({ ...set, updated_at: sql`now()` })
        .where('id', '=', e.id)
        .returningAll()
        .executeTakeFirstOrThrow()
      await announce({ namespace, service: svcName, slug })
      return {
        ...endpointView(config.proxyUrl, namespace, svcName, row),
        ...(signingSecret ? { signing_secret: signingSecret } : {}),
      }
    },
    /**
     * Publishes the service's upstream MCP server (Streamable HTTP): each tool it lists and the body
     * prices (`tool_prices`, else `default_price`) becomes a paid endpoint, a tool of the service's
     * MCP server; again, it re-reads the server's tools. `signing_secret` is in the first answer once.
     */
    async putMcpUpstream(who: SellerScope, namespace: string, svcName: string, body: McpUpstreamBody) {
      const { service: svc } = await service(who, namespace, svcName)
      return mcpUpstreams.put({ namespace, service: svc }, body ?? {})
    },
    /**
     * Publishes the service's upstream A2A agent (its Agent Card URL): each skill the card lists and
     * the body prices (`skill_prices`, else `default_price`) becomes a paid endpoint, a skill of the
     * service's A2A agent; again, it re-reads the card. `signing_secret` is in the first answer once.
     */
    async putA2aUpstream(who: SellerScope, namespace: string, svcName: string, body: A2aUpstreamBody) {
      const { service: svc } = await service(who, namespace, svcName)
      return a2aUpstreams.put({ namespace, service: svc }, body ?? {})
    },
    /** Unpublishes: the proxy answers 404 for the path once its table reloads (immediately, via the channel). */
    async deleteEndpoint(who: SellerScope, namespace: string, svcName: string, slug: string) {
      const { endpoint: e } = await endpoint(who, namespace, svcName, slug)
      await db.deleteFrom('endpoints').where('id', '=', e.id).execute()
      await announce({ namespace, service: svcName, slug, deleted: true })
    },

    /**
     * Calls the upstream once as the proxy would (forwarded headers, signature), without payment,
     * and reports status and latency. The body of the answer is not returned (it may echo secrets).
     */
    async testEndpoint(
      who: SellerScope,
      namespace: string,
      svcName: string,
      slug: string,
      body: { method?: unknown; path?: unknown } = {},
    ) {
      const { endpoint: e } = await endpoint(who, namespace, svcName, slug)
      if (!e.upstream_url)
        throw invalid('upstream_url', 'this endpoint runs a hosted handler; only upstream endpoints can be tested')
      if (e.mcp_tool) return mcpUpstreams.test(e)
      if (e.a2a_skill) return a2aUpstreams.test(e)
      const method = body.method === undefined ? (e.methods[0] ?? 'GET') : String(body.method).toUpperCase()
      if (!e.methods.includes(method)) throw invalid('method', `expected one of ${e.methods.join(', ')}`)
      const settings = decodeUpstreamConfig(e.upstream_config, e.id, [requireMasterKey(config)])
      const target = new URL(checkUpstreamUrl(e.upstream_url, config.allowPrivateUpstreams))
      const pathAndQuery = target.pathname + target.search
      const headers: Record<string, string> = { ...settings.headers, 'x-tollgate-test': '1' }
      for (const h of settings.requiredHeaders) headers[h] ??= 'test'
      headers['x-tollgate-signature'] = signUpstreamRequest(settings.signingSecret, method, pathAndQuery, undefined)
      const agent = new Agent({ connect: { lookup: guardedLookup(config.allowPrivateUpstreams) } })
      const started = performance.now()
      try {
        const res = await request(target.toString(), {
          method: method as 'GET',
          headers,
          dispatcher: agent,
          headersTimeout: settings.timeoutMs,
          bodyTimeout: settings.timeoutMs,
        })
        await res.body.dump()
        return {
          object: 'upstream_test' as const,
          ok: res.statusCode < 500,
          status: res.statusCode,
          latency_ms: Math.round(performance.now() - started),
          error: null,
        }
      } catch (err) {
        const code = (err as { code?: string }).code ?? ''
        const reason =
          code === 'ESSRF' || /refused: .* private/.test(String((err as Error).message))
            ? 'the upstream host resolves to a private address'
            : code === 'UND_ERR_HEADERS_TIMEOUT'
              ? `no answer within ${settings.timeoutMs} ms`
              : `could not connect (${code || 'error'})`
        return {
          object: 'upstream_test' as const,
          ok: false,
          status: null,
          latency_ms: Math.round(performance.now() - started),
          error: reason,
        }
      } finally {
        await agent.close().catch(() => {})
      }
    },
  }
}

/** The schemes to offer: known names; `exact` is always offered (added when missing). */
function parseSchemes(v: unknown): string[] {
  if (!Array.isArray(v) || v.some((x) => !isSchemeName(x)))
    throw invalid('schemes', `expected an array of ${SCHEME_NAMES.join(', ')} (exact is always offered)`)
  return [...new Set(['exact', ...(v as string[])])]
}

/** x402 sign-in-with-x paid access in minutes (up to a year), or null: off. */
function parseAccessMinutes(v: unknown): number | null {
  if (v === null) return null
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > 525_600)
    throw invalid('access_minutes', 'expected whole minutes from 1 to 525600 (a year), or null to turn paid access off')
  return v
}

function parseSettlement(v: unknown): 'async' | 'sync' {
  if (v !== 'async' && v !== 'sync') throw invalid('settlement_mode', 'expected async or sync')
  return v
}
function parseDescription(v: unknown): string {
  if (typeof v !== 'string' || v.length > 2000)
    throw invalid('description', 'expected a string of at most 2000 characters')
  return v
}
function parseMime(v: unknown): string {
  if (typeof v !== 'string' || !/^[\w.+-]+\/[\w.+-]+$/.test(v))
    throw invalid('mime_type', 'expected a media type such as application/json')
  return v
}
function parseBool(param: string, v: unknown): boolean {
  if (typeof v !== 'boolean') throw invalid(param, 'expected true or false')
  return v
}

export type PublishingService = ReturnType<typeof createPublishing>

/** Registry timestamps select as Date at run time (their Generated<ColumnType> type hides it). */
function iso(d: unknown): string {
  return (d as Date).toISOString()
}

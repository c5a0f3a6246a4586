import { duplicateClient, type RedisClient } from '../redis-client.js'
import type { Kysely } from 'kysely'
import type { Config } from '../config.js'
import type { Database } from '../db/database.js'
import type { JsonSchema } from '../pool/handler-contract.js'
import { buildChallenge, type Challenge, type InputSchema } from '../x402/challenge.js'
import type { PaymentRequirementsV2 } from '../x402/types.js'
import { offeredSchemes } from '../schemes/batch-settlement/offered.js'

export interface UpstreamTarget {
  url: string
  config: Record<string, unknown>
}

export interface EndpointEntry {
  id: string
  path: string
  namespace: string
  service: string
  slug: string
  methods: ReadonlySet<string>
  allow: string
  price: bigint
  payTo: `0x${string}`
  settlementMode: 'async' | 'sync'
  description: string
  mimeType: string
  inputSchema: JsonSchema | undefined
  handler: string | undefined
  upstream: UpstreamTarget | undefined
  /** the tool's name on the seller's MCP server at `upstream.url`: the call is a `tools/call` there */
  mcpTool: string | undefined
  /** the skill's id on the seller's A2A agent at `upstream.url`: the call is a `message/send` there */
  a2aSkill: string | undefined
  /** the payment schemes offered (`exact` always) */
  schemes: readonly string[]
  /**
   * x402 sign-in-with-x: a served payment gives its payer `minutes` of access to `scopeId` (this
   * endpoint, or its whole service), during which it signs in instead of paying; undefined: off
   */
  access: { minutes: number; scopeId: string; scope: 'endpoint' | 'service' } | undefined
  resourceUrl: string
  /** precomputed 402 answer per method */
  challenges: ReadonlyMap<string, Challenge>
  /** the method's challenge with other v2 requirements after exact's (one buyer's: PAYER-IDENTIFIER) */
  challengeWith(method: string, extraAccepts: readonly PaymentRequirementsV2[]): Challenge
}

/** What a scheme other than exact needs to state its requirement for one endpoint and method. */
export interface SchemeOffer {
  scheme: string
  method: string
  resourceUrl: string
  payTo: `0x${string}`
  /** atomic units */
  amount: bigint
  maxTimeoutSeconds: number
}

/** The v2 requirement of an offered scheme other than exact (undefined: not offered in this process). */
export type RequirementOf = (offer: SchemeOffer) => PaymentRequirementsV2 | undefined

/**
 * A hosted handler's example input (its module's `example`), or its output schema with an example
 * answer (`{ ...output.schema, example }`), for the Bazaar declaration of its 402.
 */
export type ExampleOf = (handler: string) => Record<string, unknown> | undefined

/** Reads every enabled endpoint of every enabled service, with its precomputed challenges. */
export async function loadEndpoints(
  db: Kysely<Database>,
  config: Readonly<Config>,
  requirementOf?: RequirementOf,
  exampleOf?: ExampleOf,
  outputOf?: ExampleOf,
): Promise<Map<string, EndpointEntry>> {
  const rows = await db
    .selectFrom('endpoints as e')
    .innerJoin('services as s', 's.id', 'e.service_id')
    .innerJoin('sellers as sl', 'sl.id', 's.seller_id')
    .select([
      'e.id',
      'e.slug',
      'e.methods',
      'e.price',
      'e.settlement_mode',
      'e.description',
      'e.mime_type',
      'e.input_schema',
      'e.handler',
      'e.upstream_url',
      'e.upstream_config',
      'e.mcp_tool',
      'e.a2a_skill',
      'e.schemes',
      'e.access_minutes',
      's.id as service_id',
      's.access_minutes as service_access_minutes',
      's.name as service',
      's.pay_to',
      'sl.namespace',
    ])
    .where('e.enabled', '=', true)
    .where('s.enabled', '=', true)
    .execute()
  const table = new Map<string, EndpointEntry>()
  for (const r of rows) {
    const path = `/${r.namespace}/${r.service}/${r.slug}`
    const resourceUrl = `${config.proxyUrl}${path}`
    const methods = new Set(r.methods.map((m) => m.toUpperCase()))
    const inputSchema = (r.input_schema ?? undefined) as JsonSchema | undefined
    const challenges = new Map<string, Challenge>()
    const payTo = r.pay_to.toLowerCase() as `0x${string}`
    const access =
      r.access_minutes !== null
        ? { minutes: r.access_minutes, scopeId: r.id, scope: 'endpoint' as const }
        : r.service_access_minutes !== null
          ? { minutes: r.service_access_minutes, scopeId: r.service_id, scope: 'service' as const }
          : undefined
    const signIn = access
      ? {
          domain: new URL(config.proxyUrl).host,
          uri: resourceUrl,
          statement: `Sign in with the wallet that paid for access to ${path}`,
          chainIds: [config.chain.caip2],
        }
      : undefined
    const challengeWith = (method: string, extraAccepts: readonly PaymentRequirementsV2[]) =>
      buildChallenge({
        resourceUrl,
        description: r.description,
        mimeType: r.mime_type,
        payTo: r.pay_to as `0x${string}`,
        amount: BigInt(r.price),
        maxTimeoutSeconds: config.x402.maxTimeoutSeconds,
        chain: config.chain,
        inputSchema: inputSchema as InputSchema | undefined,
        inputExample: r.handler ? exampleOf?.(r.handler) : undefined,
        outputDescription: r.handler ? outputOf?.(r.handler) : undefined,
        method,
        extraAccepts,
        paymentIdentifier: true,
        signIn,
      })
    for (const method of methods) {
      const extraAccepts = offeredSchemes(r.namespace, r.schemes)
        .filter((scheme) => scheme !== 'exact')
        .map((scheme) =>
          requirementOf?.({
            scheme,
            method,
            resourceUrl,
            payTo,
            amount: BigInt(r.price),
            maxTimeoutSeconds: config.x402.maxTimeoutSeconds,
          }),
        )
        .filter((a): a is PaymentRequirementsV2 => a !== undefined)
      challenges.set(method, challengeWith(method, extraAccepts))
    }
    table.set(path, {
      id: r.id,
      path,
      namespace: r.namespace,
      service: r.service,
      slug: r.slug,
      methods,
      allow: [...methods].join(', '),
      price: BigInt(r.price),
      payTo,
      settlementMode: r.settlement_mode,
      description: r.description,
      mimeType: r.mime_type,
      inputSchema,
      handler: r.handler ?? undefined,
      upstream: r.upstream_url
        ? { url: r.upstream_url, config: (r.upstream_config ?? {}) as Record<string, unknown> }
        : undefined,
      mcpTool: r.mcp_tool ?? undefined,
      a2aSkill: r.a2a_skill ?? undefined,
      schemes: offeredSchemes(r.namespace, r.schemes),
      access,
      resourceUrl,
      challenges,
      challengeWith,
    })
  }
  return table
}

/**
 * The in-memory endpoint table of one proxy process: a lookup is a Map get. Reloaded when the
 * registry announces a change (Redis pub/sub) and every `reloadMs` in case a message was missed.
 */
export async function createEndpointTable(
  deps: { db: Kysely<Database>; redis: RedisClient; config: Readonly<Config>; key(...p: string[]): string },
  opts: {
    reloadMs?: number
    onError?: (err: unknown) => void
    requirementOf?: RequirementOf
    exampleOf?: ExampleOf
    outputOf?: ExampleOf
  } = {},
) {
  let table = await loadEndpoints(deps.db, deps.config, opts.requirementOf, opts.exampleOf, opts.outputOf)
  // the endpoints of each service, for its MCP server's tool list; built from the table it belongs to
  let services: Map<string, EndpointEntry[]> | undefined
  let servicesOf: Map<string, EndpointEntry> | undefined
  let reloading: Promise<void> | undefined
  let again = false
  const reload = (): Promise<void> => {
    if (reloading) {
      again = true
      return reloading
    }
    reloading = loadEndpoints(deps.db, deps.config, opts.requirementOf, opts.exampleOf, opts.outputOf)
      .then((t) => {
        table = t
      })
      .catch((err) => opts.onError?.(err))
      .finally(() => {
        reloading = undefined
        if (again) {
          again = false
          void reload()
        }
      })
    return reloading
  }
  const sub = duplicateClient(deps.redis)
  sub.on('error', () => {})
  const channel = deps.key('registry', 'changed')
  // Redis may be down at start: (re)subscribe whenever the connection comes up, and reload then,
  // since messages may have been missed; the periodic reload covers the rest
  const subscribe = () => sub.subscribe(channel).catch(() => {})
  sub.on('message', () => void reload())
  sub.on('ready', () => {
    void subscribe()
    void reload()
  })
  await subscribe()
  const timer = setInterval(() => void reload(), opts.reloadMs ?? 30_000)
  timer.unref()
  return {
    get: (path: string) => table.get(path),
    /** the whole current table; a new Map after every reload, so it can key a cache */
    current: (): ReadonlyMap<string, EndpointEntry> => table,
    /** the endpoints of `/<namespace>/<service>`, by slug (empty when there is no such service) */
    service(namespace: string, service: string): readonly EndpointEntry[] {
      if (servicesOf !== table || !services) {
        services = groupByService(table)
        servicesOf = table
      }
      return services.get(`/${namespace}/${service}`) ?? []
    },
    get size() {
      return table.size
    },
    reload,
    async close() {
      clearInterval(timer)
      sub.disconnect()
      await reloading
    },
  }
}

function groupByService(table: ReadonlyMap<string, EndpointEntry>): Map<string, EndpointEntry[]> {
  const out = new Map<string, EndpointEntry[]>()
  for (const e of table.values()) {
    const key = `/${e.namespace}/${e.service}`
    let list = out.get(key)
    if (!list) out.set(key, (list = []))
    list.push(e)
  }
  for (const list of out.values()) list.sort((a, b) => (a.slug < b.slug ? -1 : a.slug > b.slug ? 1 : 0))
  return out
}

export type EndpointTable = Awaited<ReturnType<typeof createEndpointTable>>

import { duplicateClient, type RedisClient } from '../redis-client.js'
import type { Kysely } from 'kysely'
import type { Config } from '../config.js'
import type { Database } from '../db/database.js'
import type { JsonSchema } from '../pool/handler-contract.js'
import { buildChallenge, type Challenge, type InputSchema } from '../x402/challenge.js'
import type { PaymentRequirementsV2 } from '../x402/types.js'
import { offeredSchemes } from '../schemes/batch-settlement/offered.js'
import type { SchemeOffer } from '../seam/types.js'

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
  const table = new Map<string, EndpointEntry>()
  for (const r of await endpointRows(db)) {
    const entry = entryOf(r, config, { requirementOf, exampleOf, outputOf })
    table.set(entry.path, entry)
  }
  return table
}

function endpointRows(db: Kysely<Database>) {
  return db
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
}

type EndpointRow = Awaited<ReturnType<typeof endpointRows>>[number]

interface EntryHooks {
  requirementOf?: RequirementOf
  exampleOf?: ExampleOf
  outputOf?: ExampleOf
}

/** One endpoint's table entry, its 402 answers built for each of its methods. */
function entryOf(r: EndpointRow, config: Readonly<Config>, hooks: EntryHooks): EndpointEntry {
  const path = `/${r.namespace}/${r.service}/${r.slug}`
  const resourceUrl = `${config.proxyUrl}${path}`
  const methods = new Set(r.methods.map((m) => m.toUpperCase()))
  const inputSchema = (r.input_schema ?? undefined) as JsonSchema | undefined
  const payTo = r.pay_to.toLowerCase() as `0x${string}`
  const access = accessOf(r)
  // paid access: the 402 also declares sign-in-with-x, for the wallet that paid
  const signIn = access && {
    domain: new URL(config.proxyUrl).host,
    uri: resourceUrl,
    statement: `Sign in with the wallet that paid for access to ${path}`,
    chainIds: [config.chain.caip2],
  }
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
      inputExample: r.handler ? hooks.exampleOf?.(r.handler) : undefined,
      outputDescription: r.handler ? hooks.outputOf?.(r.handler) : undefined,
      method,
      extraAccepts,
      paymentIdentifier: true,
      signIn,
    })
  const challenges = new Map<string, Challenge>(
    [...methods].map((m) => [m, challengeWith(m, otherOffers(r, config, hooks.requirementOf, m, resourceUrl))]),
  )
  return {
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
    upstream: r.upstream_url ? { url: r.upstream_url, config: upstreamConfigOf(r) } : undefined,
    mcpTool: r.mcp_tool ?? undefined,
    a2aSkill: r.a2a_skill ?? undefined,
    schemes: offeredSchemes(r.namespace, r.schemes),
    access,
    resourceUrl,
    challenges,
    challengeWith,
  }
}

const upstreamConfigOf = (r: EndpointRow) => (r.upstream_config ?? {}) as Record<string, unknown>

/** Paid access of the endpoint's own, else of its whole service, else none. */
function accessOf(r: EndpointRow): EndpointEntry['access'] {
  if (r.access_minutes !== null) return { minutes: r.access_minutes, scopeId: r.id, scope: 'endpoint' }
  if (r.service_access_minutes !== null)
    return { minutes: r.service_access_minutes, scopeId: r.service_id, scope: 'service' }
  return undefined
}

/** The v2 requirements of the endpoint's offered schemes other than exact, for one method. */
function otherOffers(
  r: EndpointRow,
  config: Readonly<Config>,
  requirementOf: RequirementOf | undefined,
  method: string,
  resourceUrl: string,
): PaymentRequirementsV2[] {
  return offeredSchemes(r.namespace, r.schemes)
    .filter((scheme) => scheme !== 'exact')
    .map((scheme) =>
      requirementOf?.({
        scheme,
        method,
        resourceUrl,
        payTo: r.pay_to.toLowerCase() as `0x${string}`,
        amount: BigInt(r.price),
        maxTimeoutSeconds: config.x402.maxTimeoutSeconds,
      }),
    )
    .filter((a): a is PaymentRequirementsV2 => a !== undefined)
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
  const load = () => loadEndpoints(deps.db, deps.config, opts.requirementOf, opts.exampleOf, opts.outputOf)
  let table = await load()
  // the endpoints of each service, for its MCP server's tool list; built from the table it belongs to
  let services: Map<string, EndpointEntry[]> | undefined
  let servicesOf: Map<string, EndpointEntry> | undefined
  const reloader = coalescedReload(load, (t) => (table = t), opts.onError)
  const sub = await subscribeToChanges(deps, reloader.reload)
  const timer = setInterval(() => void reloader.reload(), opts.reloadMs ?? 30_000)
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
    reload: reloader.reload,
    async close() {
      clearInterval(timer)
      sub.disconnect()
      await reloader.inFlight()
    },
  }
}

/** One reload at a time; a reload asked for during one runs once more after it (never lost, never piled up). */
function coalescedReload<T>(load: () => Promise<T>, set: (t: T) => void, onError?: (err: unknown) => void) {
  let reloading: Promise<void> | undefined
  let again = false
  const reload = (): Promise<void> => {
    if (reloading) {
      again = true
      return reloading
    }
    reloading = load()
      .then(set)
      .catch((err) => onError?.(err))
      .finally(() => {
        reloading = undefined
        if (again) {
          again = false
          void reload()
        }
      })
    return reloading
  }
  return { reload, inFlight: () => reloading }
}

/** Reloads on every registry change message; Redis may be down at start, so it (re)subscribes and reloads whenever the connection comes up. */
async function subscribeToChanges(
  deps: { redis: RedisClient; key(...p: string[]): string },
  reload: () => Promise<void>,
): Promise<RedisClient> {
  const sub = duplicateClient(deps.redis)
  sub.on('error', () => {})
  const channel = deps.key('registry', 'changed')
  // messages may have been missed while it was down; the periodic reload covers the rest
  const subscribe = () => sub.subscribe(channel).catch(() => {})
  sub.on('message', () => void reload())
  sub.on('ready', () => {
    void subscribe()
    void reload()
  })
  await subscribe()
  return sub
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

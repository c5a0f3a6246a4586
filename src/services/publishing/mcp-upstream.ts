/**
 * A seller's upstream MCP server (Streamable HTTP) published as a service's paid tools: each tool
 * the server lists and the seller prices (per tool, or the default price) becomes an endpoint whose
 * target is the server (`upstream_url`) and the tool's name (`mcp_tool`), so a call to it runs the
 * same paid-call stages as any endpoint and is forwarded signed, with the seller's headers. One
 * signing secret for the server, shown once. Publishing again re-reads the server's tool list:
 * new tools are added, prices, descriptions and schemas updated, tools gone or unpriced disabled.
 */
import { randomUUID } from 'node:crypto'
import { sql, type Kysely, type Selectable, type Transaction } from 'kysely'
import type { Tool } from '@modelcontextprotocol/sdk/types.js'
import type { Config } from '../../config.js'
import type { Database, EndpointsTable, ServicesTable } from '../../db/database.js'
import { checkUpstreamUrl } from '../../net/ssrf-guard.js'
import { createUpstreamMcpClient } from '../../proxy/upstream-mcp.js'
import { newSecret } from '../../secrets/secret-token.js'
import { requireMasterKey } from '../../secrets/wallet-crypto.js'
import { invalid, SLUG } from '../accounts/validate.js'
import {
  buildUpstreamConfig,
  decodeUpstreamConfig,
  publicUpstreamConfig,
  type StoredUpstreamConfig,
  type UpstreamInput,
} from './upstream-config.js'

export interface McpUpstreamBody {
  url?: unknown
  /** tool name → price in atomic units */
  tool_prices?: unknown
  /** the price of a tool not in tool_prices; without it such tools are not published */
  default_price?: unknown
  upstream?: UpstreamInput
}

const PRICE = /^[1-9][0-9]{0,77}$/
const MAX_TOOLS = 200
const MAX_SCHEMA = 32_768

function price(param: string, v: unknown): string {
  if (typeof v !== 'string' || !PRICE.test(v))
    throw invalid(param, 'expected a positive integer of atomic units as a decimal string, e.g. "1000" for 0.001 USDC')
  return v
}

/** A tool name as an endpoint slug: lower case, runs of other characters as one dash, 3–40 characters, unique in the service. */
export function toolSlug(name: string, taken: ReadonlySet<string>): string {
  let base = name
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 34)
    .replace(/-+$/, '')
  if (base.length < 3) base = `tool-${base || 'x'}`.replace(/-+$/, '')
  if (base === 'mcp' || base === 'a2a') base = `${base}-tool`
  for (let i = 1; ; i++) {
    const s = i === 1 ? base : `${base}-${i}`
    if (!taken.has(s) && SLUG.test(s)) return s
  }
}

type Ctx = { namespace: string; service: Selectable<ServicesTable> }
type Row = Selectable<EndpointsTable>

type Deps = {
  db: Kysely<Database>
  config: Readonly<Config>
  announce(what: Record<string, unknown>): Promise<void>
}

export function createMcpUpstreams(deps: Deps) {
  return {
    put: (ctx: Ctx, body: McpUpstreamBody) => put(deps, ctx, body),
    test: (e: Row) => test(deps.config, e),
  }
}

/** The body's prices: per tool, and the default for the others (undefined: those are not published). */
function readPrices(body: McpUpstreamBody) {
  const prices = body.tool_prices ?? {}
  if (typeof prices !== 'object' || prices === null || Array.isArray(prices))
    throw invalid('tool_prices', 'expected an object of tool name to price')
  const priced = new Map(Object.entries(prices).map(([name, v]) => [name, price(`tool_prices.${name}`, v)]))
  const fallback =
    body.default_price === undefined || body.default_price === null
      ? undefined
      : price('default_price', body.default_price)
  if (priced.size === 0 && fallback === undefined)
    throw invalid('tool_prices', 'give a price for some tools, or a default_price for all')
  return { priced, fallback }
}

/** The tools the server lists, through the proxy's guarded, signed client. */
async function listTools(config: Readonly<Config>, url: string, input: UpstreamInput, secret: string): Promise<Tool[]> {
  const probeId = randomUUID()
  const settings = decodeUpstreamConfig(
    buildUpstreamConfig(requireMasterKey(config), probeId, input, secret),
    probeId,
    [requireMasterKey(config)],
  )
  const client = createUpstreamMcpClient({ allowPrivate: config.allowPrivateUpstreams })
  try {
    return await client.listTools(url, {
      headers: settings.headers,
      signingSecret: settings.signingSecret,
      timeoutMs: settings.timeoutMs,
    })
  } catch (err) {
    const code = (err as { code?: string }).code
    const why =
      code === 'ESSRF' || /private address/.test((err as Error).message)
        ? 'the host resolves to a private address'
        : (err as Error).message.slice(0, 300)
    throw invalid('url', `could not list the tools of the MCP server at ${url}: ${why}`)
  } finally {
    await client.close().catch(() => {})
  }
}

/**
 * The server's signing secret and options: one set for all its tools, kept from the tools published
 * before (`newSigning` only the first time, to show once).
 */
function serverSettings(config: Readonly<Config>, body: McpUpstreamBody, mine: Row[]) {
  const master = requireMasterKey(config)
  const previous = mine[0]
  const prevSettings = previous ? decodeUpstreamConfig(previous.upstream_config, previous.id, [master]) : undefined
  const prevPublic = previous ? publicUpstreamConfig(previous.upstream_config) : undefined
  const newSigning = prevSettings ? undefined : newSecret('tgs_').secret
  const secret = prevSettings?.signingSecret ?? newSigning!
  const input: UpstreamInput = {
    forward_headers: body.upstream?.forward_headers ?? prevSettings?.headers,
    required_headers: body.upstream?.required_headers ?? prevPublic?.required_headers,
    timeout_ms: body.upstream?.timeout_ms ?? prevPublic?.timeout_ms,
    rate_limit: body.upstream?.rate_limit ?? (prevPublic?.rate_limit === undefined ? undefined : prevPublic.rate_limit),
  }
  return { master, newSigning, secret, input }
}

/** One tool's endpoint row, added or updated (or disabled when unpriced: then undefined). */
async function upsert(
  tx: Transaction<Database>,
  ctx: Ctx,
  tool: Tool,
  p: string | undefined,
  existing: Row | undefined,
  common: { url: string; master: Buffer; input: UpstreamInput; secret: string; taken: Set<string> },
): Promise<Row | undefined> {
  if (p === undefined) {
    if (existing)
      await tx
        .updateTable('endpoints')
        .set({ enabled: false, updated_at: sql`now()` })
        .where('id', '=', existing.id)
        .execute()
    return undefined
  }
  const id = existing?.id ?? randomUUID()
  const schema = JSON.stringify(tool.inputSchema ?? { type: 'object' })
  const fields = {
    price: p,
    description: (tool.description ?? tool.title ?? '').slice(0, 2000),
    input_schema: schema.length <= MAX_SCHEMA ? schema : null,
    upstream_url: common.url,
    upstream_config: JSON.stringify(
      buildUpstreamConfig(common.master, id, common.input, common.secret) satisfies StoredUpstreamConfig,
    ),
    enabled: true,
  }
  const row = existing
    ? await tx
        .updateTable('endpoints')
        .set({ ...fields, updated_at: sql`now()` })
        .where('id', '=', id)
        .returningAll()
        .executeTakeFirstOrThrow()
    : await tx
        .insertInto('endpoints')
        .values({
          id,
          service_id: ctx.service.id,
          slug: toolSlug(tool.name, common.taken),
          methods: ['POST'],
          mime_type: 'application/json',
          handler: null,
          mcp_tool: tool.name,
          ...fields,
        })
        .returningAll()
        .executeTakeFirstOrThrow()
  common.taken.add(row.slug)
  return row
}

/** Publishes (or re-reads) the service's upstream MCP server; the signing secret is in the answer the first time. */
async function put(deps: Deps, ctx: Ctx, body: McpUpstreamBody) {
  const { db, config } = deps
  const url = checkUpstreamUrl(body.url, config.allowPrivateUpstreams, 'url')
  const { priced, fallback } = readPrices(body)
  const rows = await db.selectFrom('endpoints').selectAll().where('service_id', '=', ctx.service.id).execute()
  const mine = rows.filter((r) => r.mcp_tool !== null)
  const { master, newSigning, secret, input } = serverSettings(config, body, mine)

  const tools = await listTools(config, url, input, secret)
  if (tools.length > MAX_TOOLS)
    throw invalid('url', `the MCP server lists ${tools.length} tools; at most ${MAX_TOOLS} are published`)
  const names = new Set(tools.map((x) => x.name))
  for (const name of priced.keys())
    if (!names.has(name))
      throw invalid(
        `tool_prices.${name}`,
        `the MCP server at ${url} has no tool "${name}" (it has: ${[...names].join(', ') || 'none'})`,
      )

  const taken = new Set(rows.filter((r) => r.mcp_tool === null).map((r) => r.slug))
  const byTool = new Map(mine.map((r) => [r.mcp_tool!, r]))
  for (const r of mine) taken.add(r.slug)
  const common = { url, master, input, secret, taken }
  const published: Row[] = []
  const unpriced: string[] = []
  await db.transaction().execute(async (tx) => {
    for (const tool of tools) {
      const row = await upsert(tx, ctx, tool, priced.get(tool.name) ?? fallback, byTool.get(tool.name), common)
      if (row) published.push(row)
      else unpriced.push(tool.name)
    }
    // tools the server no longer lists
    const gone = mine.filter((r) => !names.has(r.mcp_tool!)).map((r) => r.id)
    if (gone.length)
      await tx
        .updateTable('endpoints')
        .set({ enabled: false, updated_at: sql`now()` })
        .where('id', 'in', gone)
        .execute()
  })
  await deps.announce({ namespace: ctx.namespace, service: ctx.service.name })
  const base = `${config.proxyUrl}/${ctx.namespace}/${ctx.service.name}`
  return {
    object: 'mcp_upstream' as const,
    namespace: ctx.namespace,
    service: ctx.service.name,
    url,
    mcp_url: `${base}/mcp`,
    tools: published.map((r) => ({
      name: r.mcp_tool!,
      slug: r.slug,
      price: r.price,
      endpoint_url: `${base}/${r.slug}`,
    })),
    unpriced,
    upstream: publicUpstreamConfig(published[0]?.upstream_config ?? null),
    ...(newSigning ? { signing_secret: newSigning } : {}),
  }
}

/** The test action for a tool: the server is reached (signed, with the seller's headers) and still lists it. */
async function test(config: Readonly<Config>, e: Row) {
  const settings = decodeUpstreamConfig(e.upstream_config, e.id, [requireMasterKey(config)])
  const client = createUpstreamMcpClient({ allowPrivate: config.allowPrivateUpstreams })
  const started = performance.now()
  const done = (ok: boolean, error: string | null) => ({
    object: 'upstream_test' as const,
    ok,
    status: null,
    latency_ms: Math.round(performance.now() - started),
    error,
  })
  try {
    const url = checkUpstreamUrl(e.upstream_url, config.allowPrivateUpstreams)
    const tools = await client.listTools(url, {
      headers: settings.headers,
      signingSecret: settings.signingSecret,
      timeoutMs: settings.timeoutMs,
    })
    return tools.some((x) => x.name === e.mcp_tool)
      ? done(true, null)
      : done(false, `the MCP server no longer lists the tool "${e.mcp_tool}" (publish it again to update)`)
  } catch (err) {
    const code = (err as { code?: string }).code
    return done(
      false,
      code === 'ESSRF' || /private address/.test((err as Error).message)
        ? 'the upstream host resolves to a private address'
        : `could not list the tools: ${(err as Error).message.slice(0, 200)}`,
    )
  } finally {
    await client.close().catch(() => {})
  }
}

/**
 * A seller's upstream A2A agent published as a service's paid skills: each skill its Agent Card
 * lists and the seller prices (per skill, or the default price) becomes an endpoint whose target is
 * the card (`upstream_url`) and the skill's id (`a2a_skill`), so a call to it runs the same
 * paid-call stages as any endpoint and is sent to the agent as a `message/send`, signed, with the
 * seller's headers. One signing secret for the agent, shown once. Publishing again re-reads the
 * card: new skills added, prices and descriptions updated, skills gone or unpriced disabled.
 */
import { randomUUID } from 'node:crypto'
import { sql, type Kysely, type Selectable, type Transaction } from 'kysely'
import type { AgentSkill } from '@a2a-js/sdk'
import type { Config } from '../../config.js'
import type { Database, EndpointsTable, ServicesTable } from '../../db/database.js'
import { checkUpstreamUrl } from '../../net/ssrf-guard.js'
import { createUpstreamA2aClient } from '../../proxy/upstream-a2a.js'
import { newSecret } from '../../secrets/secret-token.js'
import { requireMasterKey } from '../../secrets/wallet-crypto.js'
import { invalid } from '../accounts/validate.js'
import { toolSlug } from './mcp-upstream.js'
import {
  buildUpstreamConfig,
  decodeUpstreamConfig,
  publicUpstreamConfig,
  type StoredUpstreamConfig,
  type UpstreamInput,
} from './upstream-config.js'

export interface A2aUpstreamBody {
  /** the agent's Agent Card URL */
  card_url?: unknown
  /** skill id → price in atomic units */
  skill_prices?: unknown
  /** the price of a skill not in skill_prices; without it such skills are not published */
  default_price?: unknown
  upstream?: UpstreamInput
}

const PRICE = /^[1-9][0-9]{0,77}$/
const MAX_SKILLS = 200

function price(param: string, v: unknown): string {
  if (typeof v !== 'string' || !PRICE.test(v))
    throw invalid(param, 'expected a positive integer of atomic units as a decimal string, e.g. "1000" for 0.001 USDC')
  return v
}

type Ctx = { namespace: string; service: Selectable<ServicesTable> }
type Row = Selectable<EndpointsTable>

function readPrices(body: A2aUpstreamBody) {
  const prices = body.skill_prices ?? {}
  if (typeof prices !== 'object' || prices === null || Array.isArray(prices))
    throw invalid('skill_prices', 'expected an object of skill id to price')
  const priced = new Map(Object.entries(prices).map(([id, v]) => [id, price(`skill_prices.${id}`, v)]))
  const fallback =
    body.default_price === undefined || body.default_price === null
      ? undefined
      : price('default_price', body.default_price)
  if (priced.size === 0 && fallback === undefined)
    throw invalid('skill_prices', 'give a price for some skills, or a default_price for all')
  return { priced, fallback }
}

type Deps = {
  db: Kysely<Database>
  config: Readonly<Config>
  announce(what: Record<string, unknown>): Promise<void>
}

export function createA2aUpstreams(deps: Deps) {
  return {
    put: (ctx: Ctx, body: A2aUpstreamBody) => put(deps, ctx, body),
    test: (e: Row) => test(deps.config, e),
  }
}

/** The agent's skills, from its card read through the proxy's guarded, signed client. */
async function listSkills(
  config: Readonly<Config>,
  url: string,
  input: UpstreamInput,
  secret: string,
): Promise<AgentSkill[]> {
  const probeId = randomUUID()
  const master = requireMasterKey(config)
  const settings = decodeUpstreamConfig(buildUpstreamConfig(master, probeId, input, secret), probeId, [master])
  const client = createUpstreamA2aClient({ allowPrivate: config.allowPrivateUpstreams })
  try {
    const card = await client.readCard(url, {
      headers: settings.headers,
      signingSecret: settings.signingSecret,
      timeoutMs: settings.timeoutMs,
    })
    return card.skills
  } catch (err) {
    const code = (err as { code?: string }).code
    const why =
      code === 'ESSRF' || /private address/.test((err as Error).message)
        ? 'the host resolves to a private address'
        : (err as Error).message.slice(0, 300)
    throw invalid('card_url', `could not read the Agent Card at ${url}: ${why}`)
  } finally {
    await client.close().catch(() => {})
  }
}

/** One skill's endpoint row, added or updated (or disabled when unpriced). */
async function upsert(
  config: Readonly<Config>,
  tx: Transaction<Database>,
  ctx: Ctx,
  skill: AgentSkill,
  p: string | undefined,
  existing: Row | undefined,
  common: { url: string; input: UpstreamInput; secret: string; taken: Set<string> },
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
  const fields = {
    price: p,
    description: (skill.description || skill.name || '').slice(0, 2000),
    upstream_url: common.url,
    upstream_config: JSON.stringify(
      buildUpstreamConfig(requireMasterKey(config), id, common.input, common.secret) satisfies StoredUpstreamConfig,
    ),
    enabled: true,
  }
  if (existing)
    return tx
      .updateTable('endpoints')
      .set({ ...fields, updated_at: sql`now()` })
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirstOrThrow()
  const row = await tx
    .insertInto('endpoints')
    .values({
      id,
      service_id: ctx.service.id,
      slug: toolSlug(skill.id, common.taken),
      methods: ['POST'],
      mime_type: 'application/json',
      handler: null,
      a2a_skill: skill.id,
      ...fields,
    })
    .returningAll()
    .executeTakeFirstOrThrow()
  common.taken.add(row.slug)
  return row
}

/** Publishes (or re-reads) the service's upstream A2A agent; the signing secret is in the answer the first time. */
async function put(deps: Deps, ctx: Ctx, body: A2aUpstreamBody) {
  const { db, config } = deps
  const url = checkUpstreamUrl(body.card_url, config.allowPrivateUpstreams, 'card_url')
  const { priced, fallback } = readPrices(body)
  const rows = await db.selectFrom('endpoints').selectAll().where('service_id', '=', ctx.service.id).execute()
  const mine = rows.filter((r) => r.a2a_skill !== null)
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
    rate_limit: body.upstream?.rate_limit ?? prevPublic?.rate_limit,
  }
  const skills = await listSkills(config, url, input, secret)
  if (skills.length > MAX_SKILLS)
    throw invalid('card_url', `the agent lists ${skills.length} skills; at most ${MAX_SKILLS} are published`)
  const ids = new Set(skills.map((s) => s.id))
  for (const id of priced.keys())
    if (!ids.has(id))
      throw invalid(
        `skill_prices.${id}`,
        `the agent at ${url} has no skill "${id}" (it has: ${[...ids].join(', ') || 'none'})`,
      )

  const common = { url, input, secret, taken: new Set(rows.map((r) => r.slug)) }
  const bySkill = new Map(mine.map((r) => [r.a2a_skill!, r]))
  const published: Row[] = []
  const unpriced: string[] = []
  await db.transaction().execute(async (tx) => {
    for (const skill of skills) {
      const row = await upsert(config, tx, ctx, skill, priced.get(skill.id) ?? fallback, bySkill.get(skill.id), common)
      if (row) published.push(row)
      else unpriced.push(skill.id)
    }
    const gone = mine.filter((r) => !ids.has(r.a2a_skill!)).map((r) => r.id)
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
    object: 'a2a_upstream' as const,
    namespace: ctx.namespace,
    service: ctx.service.name,
    card_url: url,
    a2a_url: `${base}/a2a`,
    agent_card_url: `${base}/a2a/.well-known/agent-card.json`,
    skills: published.map((r) => ({
      id: r.a2a_skill!,
      slug: r.slug,
      price: r.price,
      endpoint_url: `${base}/${r.slug}`,
    })),
    unpriced,
    upstream: publicUpstreamConfig(published[0]?.upstream_config ?? null),
    ...(newSigning ? { signing_secret: newSigning } : {}),
  }
}

/** The test action for a skill: the agent's card is read (signed, with the seller's headers) and still lists it. */
async function test(config: Readonly<Config>, e: Row) {
  const started = performance.now()
  const done = (ok: boolean, error: string | null) => ({
    object: 'upstream_test' as const,
    ok,
    status: null,
    latency_ms: Math.round(performance.now() - started),
    error,
  })
  const settings = decodeUpstreamConfig(e.upstream_config, e.id, [requireMasterKey(config)])
  const client = createUpstreamA2aClient({ allowPrivate: config.allowPrivateUpstreams })
  try {
    const url = checkUpstreamUrl(e.upstream_url, config.allowPrivateUpstreams)
    const card = await client.readCard(url, {
      headers: settings.headers,
      signingSecret: settings.signingSecret,
      timeoutMs: settings.timeoutMs,
    })
    return card.skills.some((s) => s.id === e.a2a_skill)
      ? done(true, null)
      : done(false, `the agent's card no longer lists the skill "${e.a2a_skill}" (publish it again to update)`)
  } catch (err) {
    return done(false, `could not read the Agent Card: ${(err as Error).message.slice(0, 200)}`)
  } finally {
    await client.close().catch(() => {})
  }
}

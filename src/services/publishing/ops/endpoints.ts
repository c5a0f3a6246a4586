/** Endpoints of a service (hosted handler or upstream origin): publish, list, read, update, unpublish. */
import { randomUUID } from 'node:crypto'
import { sql } from 'kysely'
import { appError } from '../../../errors.js'
import { invalid, slug as parseSlug } from '../../accounts/validate.js'
import type { PublishingContext, SellerScope } from '../context.js'
import { endpointTarget, type EndpointBody } from '../endpoint-target.js'
import {
  parseAccessMinutes,
  parseBool,
  parseDescription,
  parseInputSchema,
  parseMethods,
  parseMime,
  parsePrice,
  parseSchemes,
  parseSettlement,
} from '../parse-fields.js'
import { endpointView } from '../views.js'

/** Publishes an endpoint; an upstream endpoint's signing secret is in the answer once (`signing_secret`). */
export async function createEndpoint(
  ctx: PublishingContext,
  who: SellerScope,
  namespace: string,
  svcName: string,
  body: EndpointBody,
) {
  const { service: svc } = await ctx.service(who, namespace, svcName)
  const slug = parseSlug('slug', body.slug)
  // the proxy serves the service's MCP server there (src/proxy/mcp-route.ts)
  if (slug === 'mcp')
    throw invalid('slug', '"mcp" is reserved: /<namespace>/<service>/mcp is the service\'s MCP server')
  // and its A2A agent there (src/proxy/a2a-route.ts)
  if (slug === 'a2a') throw invalid('slug', '"a2a" is reserved: /<namespace>/<service>/a2a is the service\'s A2A agent')
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
  const t = endpointTarget(ctx.config, id, body)
  const values = { ...fields, handler: t.handler, upstream_url: t.upstream_url, upstream_config: t.upstream_config }
  const row = await ctx.db
    .insertInto('endpoints')
    .values(values)
    .onConflict((oc) => oc.columns(['service_id', 'slug']).doNothing())
    .returningAll()
    .executeTakeFirst()
  if (!row) throw appError('conflict', { detail: `the endpoint "${slug}" exists in ${namespace}/${svcName}` })
  await ctx.announce({ namespace, service: svcName, slug })
  return {
    ...endpointView(ctx.config.proxyUrl, namespace, svcName, row),
    ...(t.signingSecret ? { signing_secret: t.signingSecret } : {}),
  }
}

export async function listEndpoints(ctx: PublishingContext, who: SellerScope, namespace: string, svcName: string) {
  const { service: svc } = await ctx.service(who, namespace, svcName)
  const rows = await ctx.db
    .selectFrom('endpoints')
    .selectAll()
    .where('service_id', '=', svc.id)
    .orderBy('created_at')
    // endpoints made in one transaction (an MCP upstream's tools) share created_at
    .orderBy('slug')
    .execute()
  return rows.map((r) => endpointView(ctx.config.proxyUrl, namespace, svcName, r))
}

export async function updateEndpoint(
  ctx: PublishingContext,
  who: SellerScope,
  namespace: string,
  svcName: string,
  slug: string,
  body: EndpointBody,
) {
  const { endpoint: e } = await ctx.endpoint(who, namespace, svcName, slug)
  if (body.slug !== undefined) throw invalid('slug', 'an endpoint slug cannot change; publish a new endpoint')
  const set = changedFields(body)
  let signingSecret: string | undefined
  if (body.handler !== undefined || body.upstream_url !== undefined || body.upstream !== undefined) {
    const t = endpointTarget(
      ctx.config,
      e.id,
      { handler: body.handler, upstream_url: body.upstream_url, upstream: body.upstream },
      e.handler && body.upstream_url ? undefined : e,
    )
    Object.assign(set, { handler: t.handler, upstream_url: t.upstream_url, upstream_config: t.upstream_config })
    signingSecret = t.signingSecret
  }
  const row = await ctx.db
    .updateTable('endpoints')
    .set({ ...set, updated_at: sql`now()` })
    .where('id', '=', e.id)
    .returningAll()
    .executeTakeFirstOrThrow()
  await ctx.announce({ namespace, service: svcName, slug })
  return {
    ...endpointView(ctx.config.proxyUrl, namespace, svcName, row),
    ...(signingSecret ? { signing_secret: signingSecret } : {}),
  }
}

/** The plain fields an update body changes, parsed (the target is handled apart). */
function changedFields(body: EndpointBody): Record<string, unknown> {
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
  return set
}

/** Unpublishes: the proxy answers 404 for the path once its table reloads (immediately, via the channel). */
export async function deleteEndpoint(
  ctx: PublishingContext,
  who: SellerScope,
  namespace: string,
  svcName: string,
  slug: string,
) {
  const { endpoint: e } = await ctx.endpoint(who, namespace, svcName, slug)
  await ctx.db.deleteFrom('endpoints').where('id', '=', e.id).execute()
  await ctx.announce({ namespace, service: svcName, slug, deleted: true })
}

/** Services of a namespace (one receiver each): create, list, read, update, delete. */
import { sql } from 'kysely'
import { appError } from '../../../errors.js'
import { invalid, name as parseName, slug as parseSlug } from '../../accounts/validate.js'
import type { PublishingContext, SellerScope } from '../context.js'
import { listingFields, parseAccessMinutes } from '../parse-fields.js'
import { serviceView } from '../views.js'

export type CreateServiceBody = {
  name?: unknown
  display_name?: unknown
  description?: unknown
  pay_to?: unknown
} & Record<string, unknown>

export type UpdateServiceBody = {
  display_name?: unknown
  description?: unknown
  pay_to?: unknown
  enabled?: unknown
} & Record<string, unknown>

const badDescription = () => invalid('description', 'expected a string of at most 2000 characters')

export async function createService(
  ctx: PublishingContext,
  who: SellerScope,
  namespace: string,
  body: CreateServiceBody,
) {
  const s = await ctx.seller(who, namespace)
  const name = parseSlug('name', body.name)
  const payTo = ctx.payee(body.pay_to)
  const display = body.display_name === undefined ? name : parseName('display_name', body.display_name)
  if (
    body.description !== undefined &&
    body.description !== null &&
    (typeof body.description !== 'string' || body.description.length > 2000)
  )
    throw badDescription()
  const row = await ctx.db
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
  await ctx.announce({ namespace, service: name })
  return serviceView(ctx.config.proxyUrl, namespace, row)
}

export async function listServices(ctx: PublishingContext, who: SellerScope, namespace: string) {
  const s = await ctx.seller(who, namespace)
  const rows = await ctx.db
    .selectFrom('services')
    .selectAll()
    .where('seller_id', '=', s.id)
    .orderBy('created_at')
    .execute()
  return rows.map((r) => serviceView(ctx.config.proxyUrl, namespace, r))
}

export async function updateService(
  ctx: PublishingContext,
  who: SellerScope,
  namespace: string,
  name: string,
  body: UpdateServiceBody,
) {
  const { service: svc } = await ctx.service(who, namespace, name)
  const set: Record<string, unknown> = { ...listingFields(body) }
  if (body.display_name !== undefined) set.display_name = parseName('display_name', body.display_name)
  if (body.description !== undefined) {
    if (body.description !== null && (typeof body.description !== 'string' || body.description.length > 2000))
      throw badDescription()
    set.description = body.description
  }
  if (body.pay_to !== undefined) set.pay_to = ctx.payee(body.pay_to)
  if (body.access_minutes !== undefined) set.access_minutes = parseAccessMinutes(body.access_minutes)
  if (body.enabled !== undefined) {
    if (typeof body.enabled !== 'boolean') throw invalid('enabled', 'expected true or false')
    set.enabled = body.enabled
  }
  const row = await ctx.db
    .updateTable('services')
    .set({ ...set, updated_at: sql`now()` })
    .where('id', '=', svc.id)
    .returningAll()
    .executeTakeFirstOrThrow()
  await ctx.announce({ namespace, service: name })
  return serviceView(ctx.config.proxyUrl, namespace, row)
}

export async function deleteService(ctx: PublishingContext, who: SellerScope, namespace: string, name: string) {
  const { service: svc } = await ctx.service(who, namespace, name)
  await ctx.db.deleteFrom('services').where('id', '=', svc.id).execute()
  await ctx.announce({ namespace, service: name, deleted: true })
}

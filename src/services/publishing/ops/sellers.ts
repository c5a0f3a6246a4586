/** Seller namespaces: claim one, list and read them, rename or link one to an agent. */
import { sql } from 'kysely'
import { appError } from '../../../errors.js'
import { address, invalid, name as parseName, slug as parseSlug } from '../../accounts/validate.js'
import type { PublishingContext, SellerScope } from '../context.js'
import { SELLER_COLUMNS, sellerView } from '../views.js'

export interface ClaimNamespaceBody {
  namespace?: unknown
  display_name?: unknown
}

export interface UpdateSellerBody {
  display_name?: unknown
  agent_address?: unknown
}

export async function claimNamespace(ctx: PublishingContext, who: SellerScope, body: ClaimNamespaceBody) {
  const namespace = parseSlug('namespace', body.namespace)
  const display = body.display_name === undefined ? namespace : parseName('display_name', body.display_name)
  const row = await ctx.db
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
}

export async function listSellers(ctx: PublishingContext, who: SellerScope) {
  const rows = await ctx.sellersOf(who).select(SELLER_COLUMNS).orderBy('created_at').execute()
  return rows.map(sellerView)
}

/**
 * Renames a namespace's display name, or links it to one of the owner's agents (`agent_address`,
 * null unlinks): its marketplace entries then carry `platform_agent_address`.
 */
export async function updateSeller(
  ctx: PublishingContext,
  who: SellerScope,
  namespace: string,
  body: UpdateSellerBody,
) {
  const s = await ctx.seller(who, namespace)
  const set: { display_name?: string; agent_address?: string | null } = {}
  if (body.display_name !== undefined) set.display_name = parseName('display_name', body.display_name)
  if (body.agent_address !== undefined && who.agentAddress !== undefined) {
    throw invalid(
      'agent_address',
      "an agent key cannot change which agent a namespace is listed as; use the owner's API key",
    )
  }
  if (body.agent_address === null) set.agent_address = null
  else if (body.agent_address !== undefined) set.agent_address = await ownAgent(ctx, who, body.agent_address)
  if (Object.keys(set).length === 0) return sellerView(s)
  const row = await ctx.db
    .updateTable('sellers')
    .set({ ...set, updated_at: sql`now()` })
    .where('id', '=', s.id)
    .returning(SELLER_COLUMNS)
    .executeTakeFirstOrThrow()
  await ctx.announce({ namespace })
  return sellerView(row)
}

/** The stored address of one of the user's agents, or 400. */
async function ownAgent(ctx: PublishingContext, who: SellerScope, v: unknown): Promise<string> {
  const wanted = address('agent_address', v)
  const agent = await ctx.db
    .selectFrom('agents')
    .select('address')
    .where(sql<string>`lower(address)`, '=', wanted.toLowerCase())
    .where('user_id', '=', who.userId)
    .executeTakeFirst()
  if (!agent) throw invalid('agent_address', 'expected the address of one of your agents (GET /v1/agents)')
  return agent.address
}

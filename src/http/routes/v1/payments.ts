import type { FastifyInstance } from 'fastify'
import { sql, type Kysely } from 'kysely'
import type { Database } from '../../../db/database.js'
import { appError } from '../../../errors.js'
import { isUuid } from '../../../services/accounts/key-rows.js'
import { invalid } from '../../../services/accounts/validate.js'
import { topupView } from '../../../services/topups/list.js'
import { authErrors, errorResponse, ok } from './schemas.js'

/**
 * One payment as the dashboard's detail page shows it (GET /v1/payments/{id}), by the ledger's id
 * or the agent payment's (issue 37: one payment id), and the user's recent top-ups across agents
 * (GET /v1/top-ups). A payment is the user's when one of their agents paid it or one of their
 * endpoints received it; anyone else's is 404, as a payment that does not exist.
 */
// the context is typed here, not imported from index.ts, which registers this file (no import circle)
export async function paymentRoutes(app: FastifyInstance, ctx: { deps: { db: Kysely<Database> } }) {
  const { db } = ctx.deps
  app.get<{ Params: { id: string } }>(
    '/payments/:id',
    {
      schema: {
        tags: ['history'],
        summary:
          'One payment by its ledger id or its agent-payment id: every state it went through, its transaction, the endpoint and seller, and how the call was answered',
        params: { type: 'object', properties: { id: { type: 'string', maxLength: 64 } } },
        response: {
          200: ok(
            '{object: "payment_detail", id, agent_payment_id, transaction, events, agent_payment, endpoint, agent, answer}',
          ),
          ...authErrors,
        },
      },
    },
    async (request) => paymentDetail(db, request.principal!.userId, request.params.id),
  )

  app.get<{ Querystring: { limit?: number } }>(
    '/top-ups',
    {
      schema: {
        tags: ['agents'],
        summary:
          "Your agents' top-ups from the funding wallet, newest first (one agent's, paged: /agents/{address}/top-ups)",
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: { limit: { type: 'integer', minimum: 1, maximum: 100, default: 20 } },
        },
        response: { 200: ok('{object: "list", data: [top_up with agent_name]}'), 400: errorResponse, ...authErrors },
      },
    },
    async (request) => {
      const limit = request.query.limit ?? 20
      if (!Number.isInteger(limit) || limit < 1 || limit > 100)
        throw invalid('limit', 'expected an integer from 1 to 100')
      const rows = await db
        .selectFrom('topups as t')
        .innerJoin('agents as a', 'a.id', 't.agent_id')
        .selectAll('t')
        .select('a.name as agent_name')
        .where('a.user_id', '=', request.principal!.userId)
        .orderBy('t.created_at', 'desc')
        .orderBy('t.id', 'desc')
        .limit(limit)
        .execute()
      return { object: 'list', data: rows.map((r) => ({ ...topupView(r), agent_name: r.agent_name })) }
    },
  )
}

const iso = (d: Date | string | null) => (d === null ? null : new Date(d).toISOString())

/** The user's agents (id, lower-case address, name) and the ids of the endpoints they sell. */
async function scopeOf(db: Kysely<Database>, userId: string) {
  const agents = await db.selectFrom('agents').select(['id', 'address', 'name']).where('user_id', '=', userId).execute()
  const sold = await db
    .selectFrom('endpoints as e')
    .innerJoin('services as s', 's.id', 'e.service_id')
    .innerJoin('sellers as sl', 'sl.id', 's.seller_id')
    .select('e.id')
    .where('sl.owner_user_id', '=', userId)
    .execute()
  return { agents, sold: new Set(sold.map((e) => e.id)) }
}

/** The ledger payment `id` names, or the one behind the user's agent payment `id` (matched by payer and nonce). */
async function findPayment(db: Kysely<Database>, id: string, agentIds: string[]) {
  const ledger = await db.selectFrom('payments').selectAll().where('id', '=', id).executeTakeFirst()
  if (ledger) return { ledger, agentPayment: await agentPaymentOf(db, ledger, agentIds) }
  if (agentIds.length === 0) return undefined
  const agentPayment = await db
    .selectFrom('agent_payments')
    .selectAll()
    .where('id', '=', id)
    .where('agent_id', 'in', agentIds)
    .executeTakeFirst()
  if (!agentPayment) return undefined
  const viaNonce = await db
    .selectFrom('payments')
    .selectAll()
    .where('payer', '=', agentPayment.payer)
    .where('nonce', '=', agentPayment.nonce.toLowerCase())
    .executeTakeFirst()
  return { ledger: viaNonce, agentPayment }
}

async function agentPaymentOf(db: Kysely<Database>, p: { payer: string; nonce: string }, agentIds: string[]) {
  if (agentIds.length === 0) return undefined
  return db
    .selectFrom('agent_payments')
    .selectAll()
    .where('payer', '=', p.payer)
    .where(sql`lower(nonce)`, '=', p.nonce)
    .where('agent_id', 'in', agentIds)
    .executeTakeFirst()
}

/** The endpoint a payment was for, with its service and seller by name. */
async function endpointOf(db: Kysely<Database>, endpointId: string | null) {
  if (endpointId === null) return null
  const e = await db
    .selectFrom('endpoints as e')
    .innerJoin('services as s', 's.id', 'e.service_id')
    .innerJoin('sellers as sl', 'sl.id', 's.seller_id')
    .select([
      'e.id',
      'e.slug',
      'e.methods',
      's.name as service',
      's.display_name as service_name',
      'sl.namespace',
      'sl.display_name as seller_name',
    ])
    .where('e.id', '=', endpointId)
    .executeTakeFirst()
  return e ? { ...e, path: `/${e.namespace}/${e.service}/${e.slug}` } : null
}

/**
 * How the seller's side answered the call, from the ledger: served (an answer under 400, charged),
 * voided (not served: the upstream's status when it answered one, nothing charged), or not known
 * yet (verified: the call is running) or at all (no ledger record: a seller elsewhere).
 */
function answerOf(status: string | undefined, reason: string | null | undefined) {
  if (status === undefined) return { outcome: 'unknown', http_status: null, reason: null }
  if (status === 'verified') return { outcome: 'pending', http_status: null, reason: null }
  if (status === 'voided') {
    const m = /^upstream_status_(\d{3})$/.exec(reason ?? '')
    return { outcome: 'not_served', http_status: m ? Number(m[1]) : null, reason: reason ?? null }
  }
  if (status === 'failed') return { outcome: 'served', http_status: null, reason: reason ?? null }
  return { outcome: 'served', http_status: null, reason: null }
}

async function paymentDetail(db: Kysely<Database>, userId: string, id: string) {
  if (!isUuid(id)) throw appError('not_found', { what: 'payment' })
  const scope = await scopeOf(db, userId)
  const found = await findPayment(
    db,
    id,
    scope.agents.map((a) => a.id),
  )
  const ledger = found?.ledger
  const mine = (payer: string) => scope.agents.find((a) => a.address.toLowerCase() === payer.toLowerCase())
  const owned =
    found && (found.agentPayment || (ledger && (mine(ledger.payer) || scope.sold.has(ledger.endpoint_id ?? ''))))
  if (!found || !owned) throw appError('not_found', { what: 'payment' })
  const ap = found.agentPayment
  const [events, apEvents, endpoint] = await Promise.all([
    ledger
      ? db
          .selectFrom('payment_events')
          .select(['created_at', 'type', 'from_status', 'to_status', 'reason'])
          .where('payment_id', '=', ledger.id)
          .orderBy('created_at')
          .orderBy('id')
          .execute()
      : [],
    ap
      ? db
          .selectFrom('agent_payment_events')
          .select(['created_at', 'type'])
          .where('agent_payment_id', '=', ap.id)
          .orderBy('created_at')
          .orderBy('id')
          .execute()
      : [],
    endpointOf(db, ledger?.endpoint_id ?? null),
  ])
  const payer = ledger?.payer ?? ap!.payer
  const agent = mine(payer)
  return {
    object: 'payment_detail',
    id: ledger?.id ?? null,
    agent_payment_id: ap?.id ?? null,
    /** buyer: one of your agents paid it; seller: one of your endpoints received it */
    role: agent ? 'buyer' : 'seller',
    transaction: ledger
      ? {
          status: ledger.status,
          amount: ledger.value,
          asset: ledger.asset,
          network: ledger.network,
          scheme: ledger.scheme,
          method: ledger.method,
          resource: ledger.resource,
          payer: ledger.payer,
          pay_to: ledger.pay_to,
          settlement_mode: ledger.settlement_mode,
          tx_hash: ledger.tx_hash,
          failure_reason: ledger.failure_reason,
          created_at: iso(ledger.created_at),
          settled_at: iso(ledger.settled_at),
        }
      : null,
    events: events.map((e) => ({ ...e, created_at: iso(e.created_at) })),
    agent_payment: ap
      ? {
          id: ap.id,
          status: ap.status,
          url: ap.url,
          method: ap.method,
          amount: ap.amount,
          scheme: ap.scheme,
          pay_to: ap.pay_to,
          tx_hash: ap.tx_hash,
          created_at: iso(ap.created_at),
          events: apEvents.map((e) => ({ ...e, created_at: iso(e.created_at) })),
        }
      : null,
    endpoint,
    agent: agent ? { address: agent.address, name: agent.name } : null,
    answer: answerOf(ledger?.status, ledger?.failure_reason),
  }
}

import type { FastifyInstance } from 'fastify'
import { sql } from 'kysely'
import { appError } from '../../../errors.js'
import { type AgentRow } from '../../../services/agent-payments/agent-payments.js'
import { invalid, address as parseAddress } from '../../../services/accounts/validate.js'
import { INSIGHTS_DEFAULT_DAYS, INSIGHTS_MAX_DAYS, insights } from '../../../services/insights/insights.js'
import { revenueByEndpoint } from '../../../services/insights/revenue.js'
import { unsettledFromLedger } from '../../../services/withdrawals/wallet-reservation.js'
import type { V1Context } from './index.js'
import { addressParam, authErrors, errorResponse, ok } from './schemas.js'

/**
 * The dashboard's numbers: per-day series for its charts (GET /v1/insights) and an agent's budget
 * as `tollgate budget` shows it, and its escrow accounts as `tollgate escrow` shows them, read with
 * the user's credential (GET /v1/agents/{address}/budget, GET /v1/agents/{address}/escrow).
 */
export async function insightRoutes(app: FastifyInstance, ctx: V1Context) {
  const { db } = ctx.deps
  // status() only: no agent-key look-ups, so no LISTEN connection for their cache
  const { agentPayments } = ctx.deps.services
  app.addHook('onClose', () => agentPayments.close())

  app.get<{ Querystring: { from?: string; to?: string } }>(
    '/insights',
    {
      schema: {
        tags: ['insights'],
        summary: 'Per UTC day: spend per agent, revenue and calls per endpoint, calls and failures, settlement delay',
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: {
            from: {
              type: 'string',
              description: `first UTC day, YYYY-MM-DD (default: ${INSIGHTS_DEFAULT_DAYS - 1} days before \`to\`)`,
            },
            to: { type: 'string', description: 'last UTC day, included (default: today)' },
          },
        },
        response: {
          200: ok(
            `{object: "insights", from, to, days, spend, revenue, calls, settlement_delay}: series with one value per day of \`days\`; at most ${INSIGHTS_MAX_DAYS} days`,
          ),
          400: errorResponse,
          ...authErrors,
        },
      },
    },
    async (request) => insights(db, request.principal!.userId, request.query),
  )

  app.get<{ Querystring: { since?: string } }>(
    '/revenue',
    {
      schema: {
        tags: ['insights'],
        summary:
          'Per endpoint of yours since a time (default 30 days ago): paid calls, revenue, what settled, and vouchers (deferred) not collected yet',
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: { since: { type: 'string', description: 'ISO 8601 date or time (default: 30 days ago)' } },
        },
        response: {
          200: ok(
            '{object: "revenue", since, endpoints: [{path, calls, revenue, settled, uncollected_vouchers, uncollected}], total}',
          ),
          400: errorResponse,
          ...authErrors,
        },
      },
    },
    async (request) => {
      const since =
        request.query.since === undefined ? new Date(Date.now() - 30 * 86_400_000) : new Date(request.query.since)
      if (Number.isNaN(since.getTime()) || !/^\d{4}-\d{2}-\d{2}/.test(request.query.since ?? '2000-01-01'))
        throw invalid('since', 'expected an ISO 8601 date or time such as 2026-11-01 or 2026-11-01T12:00Z')
      return revenueByEndpoint(db, request.principal!.userId, since)
    },
  )
  app.get<{ Params: { address: string } }>(
    '/agents/:address/budget',
    {
      schema: {
        tags: ['agents'],
        summary:
          'What the agent may still spend and withdraw: caps, spent today and this month, headroom, balance, unsettled',
        params: addressParam,
        response: { 200: ok('the budget, as GET /v1/agent answers an agent key, plus withdrawable'), ...authErrors },
      },
    },
    async (request) => {
      const agent = await ownAgent(request.principal!.userId, request.params.address)
      const status = await agentPayments.status(agent)
      // what may leave now: the balance less everything signed and not settled, whichever count is larger
      // (the platform's own counters, or Postgres, which also knows payments signed with the wallet's key elsewhere)
      const ledger = await unsettledFromLedger(db, agent.address, Math.floor(Date.now() / 1000))
      const unsettled = ledger > BigInt(status.unsettled) ? ledger : BigInt(status.unsettled)
      const withdrawable =
        status.balance === null
          ? null
          : (BigInt(status.balance) > unsettled ? BigInt(status.balance) - unsettled : 0n).toString()
      return { ...status, object: 'agent_budget', unsettled: unsettled.toString(), withdrawable }
    },
  )

  app.get<{ Params: { address: string } }>(
    '/agents/:address/escrow',
    {
      schema: {
        tags: ['agents'],
        summary:
          "The agent wallet's escrow accounts (deferred): balance, thawing amount and end, outstanding vouchers per seller",
        params: addressParam,
        response: { 200: ok('as GET /v1/agent/escrow answers an agent key'), ...authErrors },
      },
    },
    async (request) => agentPayments.escrow(await ownAgent(request.principal!.userId, request.params.address)),
  )

  /** The user's agent at `raw` (404 for another user's, or a malformed address). */
  async function ownAgent(userId: string, raw: string): Promise<AgentRow> {
    let address: string
    try {
      address = parseAddress('address', raw)
    } catch {
      throw appError('not_found', { what: 'agent' })
    }
    const agent = await db
      .selectFrom('agents as a')
      .select([
        'a.id',
        'a.user_id',
        'a.address',
        'a.encrypted_key',
        'a.cap_per_transaction',
        'a.cap_daily',
        'a.cap_monthly',
      ])
      .select(
        sql<
          AgentRow['allowlist']
        >`coalesce((select json_agg(json_build_object('kind', l.kind, 'value', l.value)) from agent_allowlist l where l.agent_id = a.id), '[]'::json)`.as(
          'allowlist',
        ),
      )
      .where('a.user_id', '=', userId)
      .where('a.address', '=', address)
      .executeTakeFirst()
    if (!agent) throw appError('not_found', { what: 'agent' })
    return agent as AgentRow
  }
}

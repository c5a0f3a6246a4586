import type { FastifyInstance } from 'fastify'
import { agentBudget, ownAgent } from '../../../services/insights/agent-budget.js'
import { INSIGHTS_DEFAULT_DAYS, INSIGHTS_MAX_DAYS, insights } from '../../../services/insights/insights.js'
import { revenueByEndpoint, revenueSince } from '../../../services/insights/revenue.js'
import type { V1Context } from './context.js'
import { addressParam, authErrors, errorResponse, ok } from './schemas.js'

/**
 * The dashboard's numbers: per-day series for its charts (GET /v1/insights) and an agent's budget
 * as `tollgate budget` shows it, and its escrow accounts as `tollgate escrow` shows them, read with
 * the user's credential (GET /v1/agents/{address}/budget, GET /v1/agents/{address}/escrow).
 */
export async function insightRoutes(app: FastifyInstance, ctx: V1Context) {
  // status() only: no agent-key look-ups, so no LISTEN connection for their cache
  const { agentPayments } = ctx.deps.services
  app.addHook('onClose', () => agentPayments.close())
  sellerNumberRoutes(app, ctx)
  agentReadRoutes(app, ctx)
  agentChannelRoutes(app, ctx)
  agentChannelWithdrawRoute(app, ctx)
}

/** GET /insights and /revenue: the per-day series and the revenue per endpoint */
function sellerNumberRoutes(app: FastifyInstance, ctx: V1Context) {
  const { db } = ctx.deps
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
    async (request) => revenueByEndpoint(db, request.principal!.userId, revenueSince(request.query.since)),
  )
}

/** an agent's budget, escrow accounts and channels, read with its owner's credential */
function agentReadRoutes(app: FastifyInstance, ctx: V1Context) {
  const { db } = ctx.deps
  const { agentPayments } = ctx.deps.services
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
    async (request) =>
      agentBudget(db, agentPayments, await ownAgent(db, request.principal!.userId, request.params.address)),
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
    async (request) => agentPayments.escrow(await ownAgent(db, request.principal!.userId, request.params.address)),
  )

  app.get<{ Params: { address: string } }>(
    '/agents/:address/channels',
    {
      schema: {
        tags: ['agents'],
        summary:
          "The agent wallet's batch-settlement channels: deposited, balance, charged, claimed, refundable, withdrawing",
        params: addressParam,
        response: { 200: ok('as GET /v1/agent/channels answers an agent key'), ...authErrors },
      },
    },
    async (request) => agentPayments.channels(await ownAgent(db, request.principal!.userId, request.params.address)),
  )
}

/** POST /agents/:address/channels/:id/refund: the owner's cooperative refund of an agent's channel */
function agentChannelRoutes(app: FastifyInstance, ctx: V1Context) {
  const { db } = ctx.deps
  app.post<{ Params: { address: string; id: string }; Body: { amount?: unknown } | undefined }>(
    '/agents/:address/channels/:id/refund',
    {
      bodyLimit: 4096,
      schema: {
        tags: ['agents'],
        summary:
          "Cooperative refund of the agent's batch-settlement channel: what was not charged (or `amount`) back to the agent wallet",
        params: {
          type: 'object',
          required: ['address', 'id'],
          properties: { ...addressParam.properties, id: { type: 'string', maxLength: 66 } },
        },
        body: {
          type: ['object', 'null'],
          additionalProperties: false,
          properties: { amount: { type: 'string', maxLength: 40, description: 'atomic USDC; default all' } },
        },
        response: { 200: ok('as POST /v1/agent/channels/{id}/refund answers an agent key'), ...authErrors },
      },
    },
    async (request) =>
      ctx.deps.services.agentChannelRefunds.refund(
        await ownAgent(db, request.principal!.userId, request.params.address),
        request.params.id,
        request.body ?? {},
        request.log,
      ),
  )
}

/** POST /agents/:address/channels/:id/withdraw: the owner's timed withdrawal of an agent's channel */
function agentChannelWithdrawRoute(app: FastifyInstance, ctx: V1Context) {
  const { db } = ctx.deps
  app.post<{ Params: { address: string; id: string } }>(
    '/agents/:address/channels/:id/withdraw',
    {
      bodyLimit: 4096,
      schema: {
        tags: ['agents'],
        summary:
          "Timed withdrawal of the agent's batch-settlement channel, from the agent wallet (its ETH pays the gas): initiate, then finalize once the delay is over",
        params: {
          type: 'object',
          required: ['address', 'id'],
          properties: { ...addressParam.properties, id: { type: 'string', maxLength: 66 } },
        },
        response: { 200: ok('as POST /v1/agent/channels/{id}/withdraw answers an agent key'), ...authErrors },
      },
    },
    async (request) =>
      ctx.deps.services.agentChannelWithdrawals.withdraw(
        await ownAgent(db, request.principal!.userId, request.params.address),
        request.params.id,
        request.log,
      ),
  )
}

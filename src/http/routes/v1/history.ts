import type { FastifyInstance } from 'fastify'
import { type HistoryFilters, type HistoryKind } from '../../../services/accounts/history-export.js'
import type { V1Context } from './context.js'
import { authErrors, errorResponse, ok } from './schemas.js'

type Q = HistoryFilters & { limit?: number; format?: 'json' | 'csv' | 'ndjson' }

const querystring = {
  type: 'object',
  properties: {
    from: { type: 'string', description: 'created at or after (ISO 8601)' },
    to: { type: 'string', description: 'created before (ISO 8601)' },
    agent: { type: 'string', description: 'payer address: one of your agents' },
    role: {
      type: 'string',
      enum: ['buyer', 'seller'],
      description:
        'buyer: paid by your agents (or served to them on a sign-in); seller: received (or served) by your endpoints; default both (and withdrawals, which have no role)',
    },
    kind: {
      type: 'string',
      enum: ['payment', 'sign_in', 'withdrawal'],
      description:
        'payments, sign_in (calls served on an x402 sign-in-with-x access a payment bought: amount 0, grant_payment_id names that payment; transactions only) or withdrawals (money out of your wallets), or on /v1/payment-events their events; default all',
    },
    status: {
      type: 'string',
      description:
        'transactions only: comma-separated statuses to keep, e.g. settled,failed (payments: verified, served, settling, settled, voided, failed; sign_in entries are always served; withdrawals: pending, confirmed, failed)',
    },
    endpoint: {
      type: 'string',
      description:
        'payments (and sign-ins) to endpoints whose path /namespace/service/slug contains this text, any case; withdrawals are left out',
    },
    seller: {
      type: 'string',
      description:
        'payments (and sign-ins) to sellers whose namespace or display name contains this text, any case; withdrawals are left out',
    },
    order: {
      type: 'string',
      enum: ['asc', 'desc'],
      default: 'asc',
      description:
        'asc: oldest first (created_at, id); desc: newest first. A cursor only continues the order it came from',
    },
    cursor: {
      type: 'string',
      description: 'next_cursor of the previous page (or of an interrupted export), with the same order',
    },
    limit: { type: 'integer', minimum: 1, maximum: 100, default: 20 },
    format: {
      type: 'string',
      enum: ['json', 'csv', 'ndjson'],
      default: 'json',
      description: 'csv and ndjson stream the whole filtered history (limit ignored)',
    },
  },
} as const

/** GET /v1/transactions and /v1/payment-events: pages, or streamed CSV / NDJSON exports. */
export async function historyRoutes(app: FastifyInstance, ctx: V1Context) {
  const { history } = ctx.deps.services
  for (const [path, kind, summary] of [
    [
      '/transactions',
      'transactions',
      'Payments made by your agents or received by your endpoints, calls served on a sign-in, withdrawals',
    ],
    ['/payment-events', 'payment_events', 'The event log of those payments'],
  ] as const) {
    app.get<{ Querystring: Q }>(
      path,
      {
        schema: {
          tags: ['history'],
          summary,
          description:
            path === '/payment-events'
              ? undefined
              : "A JSON page names each payment's payee on this platform: endpoint_path (/namespace/service/slug), seller (its namespace) and seller_name (its display name); the exports keep their columns.",
          querystring,
          response: {
            200: ok('a page {object: "list", data, has_more, next_cursor}, or a CSV / NDJSON stream'),
            400: errorResponse,
            ...authErrors,
          },
        },
      },
      async (request, reply) => {
        const { limit = 20, format = 'json', ...filters } = request.query
        const userId = request.principal!.userId
        if (format === 'json') return history.page(kind as HistoryKind, userId, filters, limit)
        history.validate(kind, userId, filters)
        const stamp = new Date().toISOString().replace(/[:.]/g, '-')
        reply.header('content-disposition', `attachment; filename="${kind}-${stamp}.${format}"`)
        reply.type(format === 'csv' ? 'text/csv; charset=utf-8' : 'application/x-ndjson')
        return reply.send(history.export(kind, userId, filters, format))
      },
    )
  }
}

import type { FastifyInstance } from 'fastify'
import { TOPUPS_PAGE_MAX, topupsPage } from '../../../services/topups/list.js'
import type { V1Context } from './context.js'
import { addressParam, authErrors, errorResponse, ok } from './schemas.js'

const querystring = {
  type: 'object',
  properties: {
    limit: {
      type: 'integer',
      minimum: 1,
      maximum: TOPUPS_PAGE_MAX,
      default: TOPUPS_PAGE_MAX,
      description: `page size; the default, ${TOPUPS_PAGE_MAX}, is also the most`,
    },
    cursor: { type: 'string', description: 'next_cursor of the previous page' },
  },
} as const

/** The agent's top-ups (docs/topups.md): one per need, with status, attempts, error and tx hash; paged, newest first. */
export async function topUpRoutes(app: FastifyInstance, ctx: V1Context) {
  const { db } = ctx.deps
  const { agents } = ctx.deps.services
  app.get<{ Params: { address: string }; Querystring: { limit?: number; cursor?: string } }>(
    '/agents/:address/top-ups',
    {
      schema: {
        tags: ['agents'],
        summary: "List the agent's top-ups, newest first (a failed one shows its error)",
        params: addressParam,
        querystring,
        response: {
          200: ok('a page {object: "list", data, has_more, next_cursor}, newest need first'),
          400: errorResponse,
          ...authErrors,
        },
      },
    },
    async (request) => {
      const agent = await agents.find(request.principal!.userId, request.params.address)
      return topupsPage(db, agent.id, { limit: request.query.limit, cursor: request.query.cursor })
    },
  )
}

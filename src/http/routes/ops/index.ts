import { createBullBoard } from '@bull-board/api'
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter'
import { FastifyAdapter } from '@bull-board/fastify'
import type { FastifyInstance } from 'fastify'
import type { Deps } from '../../../deps.js'
import { appError } from '../../../errors.js'
import { appErrorBody, sendAppError } from '../../../error-render.js'
import { bullConnection, settlementQueue } from '../../../queue/settlement-queue.js'
import { opsAuth } from './ops-auth.js'

export const OPS_QUEUES_PATH = '/ops/queues'

// the job states the board's API lists by (`status`), and its own `latest`
const BOARD_STATUSES = new Set([
  'latest',
  'active',
  'waiting',
  'waiting-children',
  'prioritized',
  'completed',
  'failed',
  'delayed',
  'paused',
])

/**
 * Bull Board for the `settlement` queue at /ops/queues, operator only (see opsAuth).
 * Register without a prefix: the board's routes carry their own base path.
 */
export function opsRoutes(deps: Deps) {
  return async function (app: FastifyInstance) {
    // operator endpoints stay out of the public OpenAPI document
    app.addHook('onRoute', (route) => void (route.schema = { ...route.schema, hide: true }))
    const connection = bullConnection(deps.config)
    const queue = settlementQueue(deps.config, connection)
    app.addHook('onClose', async () => {
      await queue.close()
      connection.disconnect()
    })
    const serverAdapter = new FastifyAdapter()
    serverAdapter.setBasePath(OPS_QUEUES_PATH)
    createBullBoard({
      queues: [new BullMQAdapter(queue, { readOnlyMode: false })],
      serverAdapter,
      options: { uiConfig: { boardTitle: 'Tollgate settlement' } },
    })
    app.addHook(
      'onRequest',
      opsAuth(deps.config.operatorToken, OPS_QUEUES_PATH, deps.config.baseUrl.startsWith('https:')),
    )
    // The board passes its query to Redis and decodeURIComponent unchecked and answers what they
    // throw as a 500 with the raw message: its two list parameters are checked here first, and any
    // 5xx it still gives goes out in our error shape, the detail only in the log.
    // (answered here, not thrown: the board's own error handler would render a thrown error)
    app.addHook('preHandler', async (request, reply) => {
      if (!request.url.startsWith(`${OPS_QUEUES_PATH}/api/`)) return
      const q = request.query as Record<string, unknown>
      const bad = (param: string, detail: string) =>
        sendAppError(reply, appError('invalid_parameter', { param, detail }, { details: { param } }))
      if (q.activeQueue !== undefined && q.activeQueue !== queue.name)
        return bad('activeQueue', `expected ${queue.name}`)
      if (q.status !== undefined && (typeof q.status !== 'string' || !BOARD_STATUSES.has(q.status)))
        return bad('status', `expected one of ${[...BOARD_STATUSES].join(', ')}`)
    })
    app.addHook('onSend', async (request, reply, payload) => {
      if (!request.url.startsWith(OPS_QUEUES_PATH)) return payload
      // @fastify/static refuses a file name longer than 255 bytes with a 403 that the board's error
      // handler renders in the board's shape: like any other file the board does not have, a 404 in ours
      if (reply.statusCode === 403 && request.url.startsWith(`${OPS_QUEUES_PATH}/static/`)) {
        reply.code(404).type('application/json; charset=utf-8')
        return JSON.stringify(
          appErrorBody(appError('route_not_found', { method: request.method, path: request.url.split('?')[0]! })),
        )
      }
      if (reply.statusCode < 500) return payload
      request.log.error(
        { status: reply.statusCode, detail: typeof payload === 'string' ? payload.slice(0, 500) : undefined },
        'queue board failed',
      )
      reply.code(500).type('application/json; charset=utf-8')
      return JSON.stringify(appErrorBody(appError('internal_error', { requestId: request.id })))
    })
    await app.register(serverAdapter.registerPlugin(), { prefix: OPS_QUEUES_PATH })
  }
}

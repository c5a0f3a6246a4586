import { createBullBoard } from '@bull-board/api'
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter'
import { FastifyAdapter } from '@bull-board/fastify'
import type { FastifyInstance } from 'fastify'
import type { Deps } from '../../../deps.js'
import { bullConnection, settlementQueue } from '../../../queue/settlement-queue.js'
import { opsAuth } from './ops-auth.js'

export const OPS_QUEUES_PATH = '/ops/queues'

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
    createBullBoard({ queues: [new BullMQAdapter(queue, { readOnlyMode: false })], serverAdapter, options: { uiConfig: { boardTitle: 'Tollgate settlement' } } })
    app.addHook('onRequest', opsAuth(deps.config.operatorToken, OPS_QUEUES_PATH, deps.config.baseUrl.startsWith('https:')))
    await app.register(serverAdapter.registerPlugin(), { prefix: OPS_QUEUES_PATH })
  }
}

import type { FastifyInstance } from 'fastify'
import type { Deps } from '../../../deps.js'
import { bullConnection, settlementQueue } from '../../../queue/settlement-queue.js'
import { createSettlementMetrics } from '../../../services/metrics/settlement-metrics.js'
import { operatorAuth } from '../marketplace/operator-auth.js'

/**
 * GET /metrics (Prometheus text). Needs `Authorization: Bearer <TOLLGATE_OPERATOR_TOKEN>` when a
 * token is configured; open without one in the sandbox only (production without a token: 401).
 */
export function metricsRoutes(deps: Deps) {
  return async function (app: FastifyInstance) {
    // operator endpoints stay out of the public OpenAPI document
    app.addHook('onRoute', (route) => void (route.schema = { ...route.schema, hide: true }))
    const connection = bullConnection(deps.config)
    const queue = settlementQueue(deps.config, connection)
    const metrics = createSettlementMetrics(deps, queue)
    app.addHook('onClose', async () => {
      await queue.close()
      connection.disconnect()
    })
    if (deps.config.operatorToken || deps.config.deployment !== 'sandbox')
      app.addHook('preHandler', operatorAuth(deps.config.operatorToken))
    app.get('/metrics', async (_request, reply) => reply.type(metrics.contentType).send(await metrics.render()))
  }
}

import Fastify, { type FastifyInstance } from 'fastify'
import type { Deps } from '../deps.js'
import { loggerOptions } from '../logger.js'
import { installErrorHandler } from './plugins/error-handler.js'
import { healthRoutes } from './routes/health/index.js'
import { marketplaceRoutes } from './routes/marketplace/index.js'

export interface WebAppOptions {
  /** pass false in tests to keep output quiet */
  logger?: boolean
}

/**
 * The `web` role ({base_url}): user API /v1, marketplace /api/v1, dashboard, docs, health.
 * Returns an instance that never listens; start/web.ts listens.
 */
export async function buildWebApp(deps: Deps, opts: WebAppOptions = {}): Promise<FastifyInstance> {
  const app = Fastify({
    logger: opts.logger === false ? false : loggerOptions(deps.config.logLevel),
    bodyLimit: 1024 * 1024,
    trustProxy: true,
    return503OnClosing: true,
  })
  installErrorHandler(app)
  await app.register(healthRoutes(deps))
  await app.register(marketplaceRoutes(deps))
  return app
}

import Fastify, { type FastifyInstance } from 'fastify'
import type { Deps } from '../deps.js'
import { loggerOptions } from '../logger.js'
import { installErrorHandler } from './plugins/error-handler.js'
import { healthRoutes } from './routes/health/index.js'

export interface ProxyAppOptions {
  logger?: boolean
}

/**
 * The `proxy` role ({proxy_url}): the paid hot path at /<namespace>/<service>/<slug>.
 * Returns an instance that never listens; start/proxy.ts listens.
 */
export async function buildProxyApp(deps: Deps, opts: ProxyAppOptions = {}): Promise<FastifyInstance> {
  const app = Fastify({
    logger: opts.logger === false ? false : loggerOptions(deps.config.logLevel),
    bodyLimit: 1024 * 1024,
    trustProxy: true,
    return503OnClosing: true,
    routerOptions: { maxParamLength: 200 },
  })
  installErrorHandler(app)
  await app.register(healthRoutes(deps))
  return app
}

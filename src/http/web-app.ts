import Fastify, { type FastifyInstance } from 'fastify'
import type { DestinationStream } from 'pino'
import { type Deps, withOwnServices } from '../deps.js'
import { loggerOptions } from '../logger.js'
import { SESSION_COOKIE } from './plugins/api-key-auth.js'
import { dashboardOrigins, installCrossOriginGuard } from './plugins/cross-origin-guard.js'
import { installErrorHandler } from './plugins/error-handler.js'
import { installInputGuard } from './plugins/input-guard.js'
import { healthRoutes } from './routes/health/index.js'
import { registerOpenApi } from './openapi.js'
import { v1Routes, type V1Options } from './routes/v1/index.js'
import { marketplaceRoutes } from './routes/marketplace/index.js'

export interface WebAppOptions {
  /** pass false in tests to keep output quiet */
  logger?: boolean
  /** where log lines go (default stdout); tests capture them to scan for secrets */
  logStream?: DestinationStream
  /** user API limits (tests lower them) */
  v1?: V1Options
}

/**
 * The `web` role ({base_url}): user API /v1, marketplace /api/v1, the x402 facilitator API /facilitator,
 * dashboard, docs, health.
 * Returns an instance that never listens; start/web.ts listens.
 */
export async function buildWebApp(given: Deps, opts: WebAppOptions = {}): Promise<FastifyInstance> {
  const { deps, close: closeServices } = withOwnServices(given)
  const logger = loggerOptions(deps.config.logLevel)
  const app = Fastify({
    logger:
      opts.logger === false
        ? false
        : opts.logStream && typeof logger === 'object'
          ? { ...logger, stream: opts.logStream }
          : logger,
    bodyLimit: 1024 * 1024,
    // false unless TRUST_PROXY names the load balancer: a client must not choose its own request.ip
    trustProxy: deps.config.trustProxy,
    return503OnClosing: true,
  })
  installErrorHandler(app)
  app.addHook('onClose', closeServices)
  installInputGuard(app)
  // the session cookie goes to every path of this origin: state-changing requests it authenticates,
  // and logins, are taken only from the dashboard's own origin
  installCrossOriginGuard(app, { origins: dashboardOrigins(deps.config), cookies: [SESSION_COOKIE] })
  // every body this app takes is JSON: a text/plain one is 415 "send application/json" (as other
  // types are), not a 400 saying the body "must be object"
  app.removeContentTypeParser('text/plain')
  // before the routes: the OpenAPI document is built from the routes registered after it
  await registerOpenApi(app, deps.config)
  await app.register(
    healthRoutes(deps, (await import('../services/metrics/relayer-funds.js')).relayerReadinessChecks(deps)),
  )
  await app.register(v1Routes(deps, opts.v1), { prefix: '/v1' })
  await app.register((await import('./routes/v1/agent-payments.js')).agentPaymentRoutes(deps), { prefix: '/v1/agent' })
  await app.register(marketplaceRoutes(deps))
  // the deferred scheme's facilitator endpoints (edgeandnode/x402 scheme_deferred_evm_facilitator.md)
  await app.register((await import('./routes/deferred/facilitator.js')).deferredFacilitatorRoutes(deps))
  // facilitator mode: the standard x402 facilitator API (verify, settle, supported) for sellers' own servers
  await app.register((await import('./routes/facilitator/index.js')).facilitatorRoutes(deps), {
    prefix: '/facilitator',
  })
  await app.register((await import('./routes/metrics/index.js')).metricsRoutes(deps))
  await app.register((await import('./routes/ops/index.js')).opsRoutes(deps))
  await app.register((await import('./routes/dashboard/index.js')).dashboardRoutes())
  await app.register((await import('./routes/docs/paid-endpoints.js')).paidEndpointDocsRoutes(deps))
  return app
}

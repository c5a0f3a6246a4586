import Fastify, { type FastifyInstance } from 'fastify'
import type { Deps } from '../deps.js'
import { loggerOptions } from '../logger.js'
import { endpointTable, type EndpointEntry } from '../proxy/endpoint-table.js'
import { paidRoute, type SyncSettlement } from '../proxy/paid-route.js'
import { paymentLedger } from '../proxy/payment-ledger.js'
import { upstreamClient, type UpstreamOptions } from '../proxy/upstream.js'
import { createHandlerPool } from '../pool/handler-pool.js'
import { loadHandlerRegistry } from '../pool/handler-registry.js'
import { payerCredit } from '../services/payer-credit.js'
import { installErrorHandler } from './plugins/error-handler.js'
import { healthRoutes } from './routes/health/index.js'

export interface ProxyAppOptions {
  logger?: boolean
  /** sync settlement for endpoints in `sync` mode (the settlement service) */
  sync?: SyncSettlement
  /** decrypts an endpoint's upstream secrets; default: plain values only */
  upstreamOptions?: (entry: EndpointEntry) => UpstreamOptions
  /** tests only: hosted handlers may fetch loopback/private addresses */
  allowPrivateNetwork?: boolean
  providers?: Record<string, string | undefined>
  /** where hosted handler modules live (tests point this at fixtures) */
  handlersDir?: string
}

/** Plain (unencrypted) upstream settings: timeout only. Secrets need the publishing service's decryptor. */
function plainUpstreamOptions(entry: EndpointEntry): UpstreamOptions {
  const c = entry.upstream?.config ?? {}
  return { timeoutMs: typeof c.timeoutMs === 'number' ? c.timeoutMs : undefined }
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
  const table = await endpointTable(deps, { onError: (err) => app.log.error({ err }, 'endpoint table reload failed') })
  const ledger = paymentLedger(deps.db)
  const pool = createHandlerPool(deps.config.handlers)
  const upstream = upstreamClient()
  app.addHook('onClose', async () => {
    await ledger.drain()
    await Promise.allSettled([table.close(), pool.close(), upstream.close()])
  })
  await app.register(healthRoutes(deps))
  await app.register(
    paidRoute({
      deps,
      table,
      ledger,
      credit: payerCredit(deps),
      pool,
      handlers: await loadHandlerRegistry(opts.handlersDir),
      upstream,
      upstreamOptions: opts.upstreamOptions ?? plainUpstreamOptions,
      sync: opts.sync,
      allowPrivateNetwork: opts.allowPrivateNetwork,
      providers: opts.providers,
    }),
  )
  return app
}

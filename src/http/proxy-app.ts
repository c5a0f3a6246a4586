import Fastify, { type FastifyInstance } from 'fastify'
import { assertNativeSecp256k1 } from '../chain/recover-signer.js'
import { signerRecovery, type SignerRecovery } from '../chain/signer-recovery.js'
import type { Deps } from '../deps.js'
import { loggerOptions } from '../logger.js'
import { endpointTable, type EndpointEntry } from '../proxy/endpoint-table.js'
import { paidRoute, type SyncSettlement } from '../proxy/paid-route.js'
import { paymentLedger } from '../proxy/payment-ledger.js'
import { upstreamClient, type UpstreamOptions } from '../proxy/upstream.js'
import { createHandlerPool } from '../pool/handler-pool.js'
import { loadHandlerRegistry } from '../pool/handler-registry.js'
import { payerCredit } from '../services/payer-credit.js'
import { decodeUpstreamConfig } from '../services/publishing/upstream-config.js'
import { installErrorHandler } from './plugins/error-handler.js'
import { healthRoutes } from './routes/health/index.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** the proxy's signer recovery (its counters show where signatures were recovered) */
    signerRecovery?: SignerRecovery
  }
}

export interface ProxyAppOptions {
  logger?: boolean
  /** sync settlement for endpoints in `sync` mode (the settlement service) */
  sync?: SyncSettlement
  /** decrypts an endpoint's upstream secrets; default: plain values only */
  upstreamOptions?: (entry: EndpointEntry) => UpstreamOptions
  /** tests only: hosted handlers may fetch loopback/private addresses */
  allowPrivateNetwork?: boolean
  /** settings of provider-backed hosted handlers; default: config.handlerProviders */
  providers?: Record<string, string | undefined>
  /** where hosted handler modules live (tests point this at fixtures) */
  handlersDir?: string
}

/**
 * The seller's upstream settings with their secrets decrypted, once per loaded entry (the table
 * builds new entries on every reload, so a changed secret is picked up with the change).
 */
function upstreamSettings(masterKey: Buffer | undefined) {
  const cache = new WeakMap<EndpointEntry, UpstreamOptions>()
  return (entry: EndpointEntry): UpstreamOptions => {
    let o = cache.get(entry)
    if (!o) {
      const stored = entry.upstream?.config as { version?: number } | undefined
      o = stored?.version === 1 && masterKey ? decodeUpstreamConfig(stored, entry.id, [masterKey]) : {}
      cache.set(entry, o)
    }
    return o
  }
}

/**
 * The `proxy` role ({proxy_url}): the paid hot path at /<namespace>/<service>/<slug>.
 * Returns an instance that never listens; start/proxy.ts listens.
 */
export async function buildProxyApp(deps: Deps, opts: ProxyAppOptions = {}): Promise<FastifyInstance> {
  // the JS fallback is ~30x slower: refuse to start rather than degrade silently
  assertNativeSecp256k1()
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
  const upstream = upstreamClient({ allowPrivate: deps.config.allowPrivateUpstreams })
  const recovery = signerRecovery({ threads: deps.config.x402.recoveryThreads, offload: deps.config.x402.recoveryOffload })
  app.decorate('signerRecovery', recovery)
  app.addHook('onClose', async () => {
    await ledger.drain()
    await Promise.allSettled([table.close(), pool.close(), upstream.close(), recovery.close()])
  })
  await app.register(healthRoutes(deps, (await import('../services/metrics/relayer-funds.js')).relayerReadinessChecks(deps)))
  await app.register(
    paidRoute({
      deps,
      table,
      ledger,
      credit: payerCredit(deps),
      pool,
      recovery,
      handlers: await loadHandlerRegistry(opts.handlersDir),
      upstream,
      upstreamOptions: opts.upstreamOptions ?? upstreamSettings(deps.config.masterKey),
      sync: opts.sync,
      allowPrivateNetwork: opts.allowPrivateNetwork,
      providers: opts.providers ?? deps.config.handlerProviders,
    }),
  )
  return app
}

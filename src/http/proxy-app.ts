import { privateKeyToAccount } from 'viem/accounts'
import Fastify, { type FastifyInstance } from 'fastify'
import type { DestinationStream } from 'pino'
import { assertNativeSecp256k1 } from '../chain/recover-signer.js'
import { createSignerRecovery, type SignerRecovery } from '../chain/signer-recovery.js'
import { type Deps, withOwnServices } from '../deps.js'
import { loggerOptions } from '../logger.js'
import { createEndpointTable, type EndpointEntry, type EndpointTable } from '../proxy/endpoint-table.js'
import { createAccessUseWriter } from '../ledger/access-use-writer.js'
import { createLedgerWriter } from '../ledger/ledger-writer.js'
import { createPayerCredit } from '../ledger/payer-credit.js'
import type { SettleNow } from '../ledger/settle-now.js'
import { createFixedWindowLimiter } from '../limits/fixed-window.js'
import { createPaidCall, type PaidCall } from '../proxy/paid-call/paid-call.js'
import { createPaymentIdentifierStore } from '../db/payment-identifier-store.js'
import { createAccessGrantStore } from '../db/access-grant-store.js'
import type { PaidCallHooks } from '../proxy/paid-call/test-hooks.js'
import { mcpRoute } from '../proxy/mcp-route.js'
import { a2aRoute } from '../proxy/a2a-route.js'
import { RedisTaskStore } from '../proxy/a2a-task-store.js'
import { originRoutes } from '../proxy/origin-routes.js'
import { paidRoute } from '../proxy/paid-route.js'
import { paymentLookupRoutes } from '../proxy/payment-lookup.js'
import { createUpstreamClient, type UpstreamOptions } from '../proxy/upstream.js'
import { createUpstreamA2aClient } from '../proxy/upstream-a2a.js'
import { createUpstreamMcpClient } from '../proxy/upstream-mcp.js'
import { createHandlerPool, type HandlerPool } from '../pool/handler-pool.js'
import { loadHandlerRegistry, type RegisteredHandler } from '../pool/handler-registry.js'
import { createRemotePool } from '../pool/remote-pool.js'
import { createDeferredScheme } from '../schemes/deferred/deferred-scheme.js'
import { createBatchSettlementScheme } from '../schemes/batch-settlement/batch-scheme.js'
import { ensurePlatformKey } from '../services/wallets/platform-key.js'
import type { AuthorizerSigner } from '../chain/batch-settlement/authorizer.js'
import { createExactScheme } from '../schemes/exact/exact-scheme.js'
import { createSmartWalletCheck, type SmartWalletCheck } from '../schemes/smart-wallet-check.js'
import { createUptoScheme } from '../schemes/upto/upto-scheme.js'
import type { PaymentScheme } from '../schemes/scheme.js'
import { createHttpTransport } from '../transports/http.js'
import { createMcpTransport } from '../transports/mcp.js'
import { createA2aTransport } from '../transports/a2a.js'
import { decodeUpstreamConfig } from '../services/publishing/upstream-config.js'
import { installErrorHandler } from './plugins/error-handler.js'
import { healthRoutes } from './routes/health/index.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** the proxy's signer recovery (its counters show where signatures were recovered) */
    createSignerRecovery?: SignerRecovery
  }
}

export interface ProxyAppOptions {
  logger?: boolean
  /** where log lines go (default stdout); tests capture them to scan for secrets */
  logStream?: DestinationStream
  /** sync settlement for endpoints in `sync` mode (the settlement service) */
  sync?: SettleNow
  /** decrypts an endpoint's upstream secrets; default: plain values only */
  upstreamOptions?: (entry: EndpointEntry) => UpstreamOptions
  /** tests only: hosted handlers may fetch loopback/private addresses */
  allowPrivateNetwork?: boolean
  /** settings of provider-backed hosted handlers; default: config.handlerProviders */
  providers?: Record<string, string | undefined>
  /** where hosted handler modules live (tests point this at fixtures) */
  handlersDir?: string
  /** tests only: called between the stages of a paid call (TOLLGATE_TEST_PROXY_CRASH_AT) */
  hooks?: PaidCallHooks
  /** where hosted handler calls run; default: the `handlers` role at HANDLERS_URL, else handler processes of this proxy's own (bench:proxy passes the thread pool to compare) */
  handlerPool?: HandlerPool
  /** tests only: false answers every A2A message with the SDK's request handler (the direct path's comparison test) */
  a2aDirect?: boolean
  /** tests and bench only: false answers every MCP message through a server of the SDK's (default: the direct path) */
  mcpDirect?: boolean
}

/**
 * The seller's upstream settings with their secrets decrypted, once per loaded entry (the table
 * builds new entries on every reload, so a changed secret is picked up with the change). Without
 * the master key, stored settings (all encrypted) are `unreadable` and the paid route refuses them.
 */
function upstreamSettings(masterKey: Buffer | undefined) {
  const cache = new WeakMap<EndpointEntry, UpstreamOptions>()
  return (entry: EndpointEntry): UpstreamOptions => {
    let o = cache.get(entry)
    if (!o) {
      const stored = entry.upstream?.config as { version?: number } | undefined
      if (stored && Object.keys(stored).length > 0 && !masterKey) o = { unreadable: true }
      else o = stored?.version === 1 && masterKey ? decodeUpstreamConfig(stored, entry.id, [masterKey]) : {}
      cache.set(entry, o)
    }
    return o
  }
}

/** The schemes this proxy offers: exact always; deferred, upto and batch-settlement where configured. */
function proxySchemes(
  deps: Deps,
  recovery: SignerRecovery,
  smartWallets: SmartWalletCheck,
  receiverAuthorizer: AuthorizerSigner | undefined,
): PaymentScheme[] {
  const credit = createPayerCredit(deps)
  const schemes: PaymentScheme[] = [createExactScheme(deps, { credit, recovery, smartWallets })]
  // deferred is offered where an escrow is configured (DEFERRED_ESCROW_ADDRESS); elsewhere endpoints that enable it offer exact only
  if (deps.config.deferredEscrowAddress)
    schemes.push(createDeferredScheme(deps, { recovery, escrow: deps.config.deferredEscrowAddress }))
  // upto is offered where enabled and our relayers settle: each endpoint names one of them as the witness's facilitator
  const uptoFacilitators = deps.config.relayerKeys.map((k) => privateKeyToAccount(k).address)
  if (deps.config.upto.enabled && uptoFacilitators.length > 0)
    schemes.push(createUptoScheme(deps, { credit, recovery, smartWallets, facilitators: uptoFacilitators }))
  // batch-settlement where enabled and the platform holds its receiverAuthorizer key (batchReceiverAuthorizer)
  if (receiverAuthorizer) {
    const withdrawDelay = deps.config.batchSettlement.withdrawDelay
    schemes.push(createBatchSettlementScheme(deps, { recovery, smartWallets, receiverAuthorizer, withdrawDelay }))
  }
  return schemes
}

/**
 * The platform key that authorizes batch-settlement claims and refunds (created on first use,
 * encrypted under the master key); undefined where the scheme is off or no master key is set.
 */
async function batchReceiverAuthorizer(deps: Deps): Promise<AuthorizerSigner | undefined> {
  const masterKey = deps.config.masterKey
  if (!deps.config.batchSettlement.enabled || !masterKey) return undefined
  return (await ensurePlatformKey(deps.db, masterKey, 'batch-receiver-authorizer')).signer
}

/**
 * The `proxy` role ({proxy_url}): the paid hot path at /<namespace>/<service>/<slug>, and each
 * service as an MCP server at /<namespace>/<service>/mcp.
 * Returns an instance that never listens; start/proxy.ts listens.
 */
/**
 * A hosted endpoint's example input (its module's `example`) and its output schema with an example
 * answer (`{ ...output.schema, example: output.example }`), for the Bazaar declaration of its 402.
 */
function hostedExamples(handlers: Map<string, RegisteredHandler>) {
  return {
    exampleOf: (handler: string) => handlers.get(handler)?.module.example as Record<string, unknown> | undefined,
    outputOf: (handler: string) => {
      const output = handlers.get(handler)?.module.output
      return output?.example ? { ...output.schema, example: output.example } : undefined
    },
  }
}

export async function buildProxyApp(given: Deps, opts: ProxyAppOptions = {}): Promise<FastifyInstance> {
  const { deps, close: closeServices } = withOwnServices(given)
  // the JS fallback is ~30x slower: refuse to start rather than degrade silently
  assertNativeSecp256k1()
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
    routerOptions: { maxParamLength: 200 },
  })
  installErrorHandler(app)
  app.addHook('onClose', closeServices)
  const recovery = createSignerRecovery({
    threads: deps.config.x402.recoveryThreads,
    offload: deps.config.x402.recoveryOffload,
  })
  // one bounded RPC checker for smart-wallet payers, whichever scheme they pay with
  const smartWallets = createSmartWalletCheck(deps)
  const schemes = proxySchemes(deps, recovery, smartWallets, await batchReceiverAuthorizer(deps))
  const handlers = await loadHandlerRegistry(opts.handlersDir)
  const table = await createEndpointTable(deps, {
    onError: (err) => app.log.error({ err }, 'endpoint table reload failed'),
    requirementOf: (offer) => schemes.find((s) => s.name === offer.scheme)?.requirement?.(offer),
    // each hosted endpoint's 402 declares its module's example input and answer (bazaar `info`)
    ...hostedExamples(handlers),
  })
  const ledger = createLedgerWriter(deps.db)
  const accessUses = createAccessUseWriter(deps.db)
  // handler code never runs in this process: in the `handlers` role, or in processes it supervises
  const pool =
    opts.handlerPool ??
    (deps.config.handlers.url.length > 0
      ? createRemotePool(deps.config.handlers.url)
      : createHandlerPool({ ...deps.config.handlers, log: (message) => app.log.warn(message) }))
  const upstreams = createUpstreams(deps.config.allowPrivateUpstreams)
  app.decorate('createSignerRecovery', recovery)
  app.addHook('onClose', async () => {
    await Promise.all([ledger.drain(), accessUses.drain()])
    await Promise.allSettled([
      table.close(),
      pool.close(),
      upstreams.close(),
      recovery.close(),
      ...schemes.map((s) => s.close?.()),
    ])
  })
  await app.register(
    healthRoutes(deps, (await import('../services/metrics/relayer-funds.js')).relayerReadinessChecks(deps)),
  )
  // Without the key a seller's stored settings (required and forwarded headers, rate limit,
  // timeout, signing secret) cannot be read, and the paid route refuses those endpoints.
  if (!deps.config.masterKey && !opts.upstreamOptions)
    app.log.warn(
      'TOLLGATE_MASTER_KEY is not set: paid calls to seller endpoints with stored upstream settings are refused with 503',
    )
  const paidCall = createPaidCall({
    table,
    schemes,
    ledger,
    limiter: createFixedWindowLimiter(deps.redis, deps.key),
    pool,
    ...upstreams.clients,
    sync: opts.sync,
    maxPaymentHeaderBytes: deps.config.x402.maxHeaderBytes,
    handlers,
    providers: opts.providers ?? deps.config.handlerProviders,
    allowPrivateNetwork: opts.allowPrivateNetwork ?? false,
    defaultTimeoutMs: deps.config.handlers.timeoutMs,
    upstreamOptions: opts.upstreamOptions ?? upstreamSettings(deps.config.masterKey),
    hooks: opts.hooks,
    uptoLlmRatePer1kTokens: deps.config.upto.llmRatePer1kTokens,
    paymentIds: {
      store: createPaymentIdentifierStore(deps.db, deps.config.x402.paymentIds),
      answerMaxBytes: deps.config.x402.paymentIds.answerMaxBytes,
    },
    signIn: {
      grants: createAccessGrantStore(deps.db, { redis: deps.redis, key: deps.key }),
      uses: accessUses,
      redis: deps.redis,
      key: deps.key,
      smartWallets,
    },
  })
  await app.register(paidRoute(paidCall, createHttpTransport(deps.config.chain)))
  await registerAgentTransports(app, paidCall, deps, table, { a2a: opts.a2aDirect, mcp: opts.mcpDirect })
  await app.register(paymentLookupRoutes(deps))
  await app.register(originRoutes(table, deps.config))
  return app
}

/** The paid call over the agents' protocols: each service's MCP server and its A2A agent. */
async function registerAgentTransports(
  app: FastifyInstance,
  paidCall: PaidCall,
  deps: Deps,
  table: EndpointTable,
  direct: { a2a?: boolean; mcp?: boolean },
): Promise<void> {
  const { config } = deps
  await app.register(mcpRoute(paidCall, createMcpTransport(config.chain), table, { direct: direct.mcp }))
  // a task made on one proxy is read and paid on any other
  const tasks = new RedisTaskStore(deps.redis, (taskId) => deps.key('a2a', 'task', taskId))
  await app.register(
    a2aRoute(paidCall, createA2aTransport(config.chain), table, config.proxyUrl, { direct: direct.a2a, tasks }),
  )
}

/** The clients of sellers' origins: HTTP, MCP servers and A2A agents, all through the SSRF guard. */
function createUpstreams(allowPrivate: boolean) {
  const clients = {
    upstream: createUpstreamClient({ allowPrivate }),
    upstreamMcp: createUpstreamMcpClient({ allowPrivate }),
    upstreamA2a: createUpstreamA2aClient({ allowPrivate }),
  }
  return {
    clients,
    close: () => Promise.allSettled(Object.values(clients).map((c) => c.close())),
  }
}

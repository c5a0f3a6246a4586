import { createPublicClient, http, type PublicClient } from 'viem'
import type { Config } from './config.js'
import type { CoreDeps } from './core-deps.js'
import { createDb } from './db/create-db.js'
import { processLogger } from './logger.js'
import { createRedisClient } from './redis-client.js'
import { requireMasterKey } from './secrets/wallet-crypto.js'
import { createAgentKeys } from './services/accounts/agent-keys.js'
import { createAgents } from './services/accounts/agents.js'
import { createAllowlist } from './services/accounts/allowlist.js'
import { createApiKeys } from './services/accounts/api-keys.js'
import { createHistory } from './services/accounts/history-export.js'
import { createLoginDevices } from './services/accounts/login-devices.js'
import { createUsers } from './services/accounts/users.js'
import { createAgentPayments } from './services/agent-payments/agent-payments.js'
import { createAgentChannelRefunds } from './services/agent-payments/agent-channel-refunds.js'
import { createAgentChannelWithdrawals } from './services/agent-payments/agent-channel-withdrawals.js'
import { createCuratedAdmin } from './services/marketplace/curated-admin.js'
import { createDeferredFacilitator } from './services/deferred-facilitator/facilitator.js'
import { createPublishing } from './services/publishing/publishing.js'
import { createTopups, type Topups } from './services/topups/topups.js'
import { createWebhooks } from './services/events/webhooks.js'
import { createWithdrawals, type Withdrawals } from './services/withdrawals/withdrawals.js'

/**
 * Everything a process role needs, built once from the config. The one wiring place: the config and
 * clients (`CoreDeps`, src/core-deps.ts, what services take) and the services built on them.
 */
export interface Deps extends CoreDeps {
  /** the domain services, each built on first use and closed with the deps */
  services: Services
  close(): Promise<void>
}

/**
 * The domain services a role's routes use, built here once per process (on first use, so a role
 * pays only for what it touches) and handed down: routes never construct them, and they are closed
 * with the deps. Services whose life is tied to one app (the marketplace snapshot, the metrics
 * registry) stay with their routes. The worker's jobs use these too, through `withLogger(log)` where
 * a service logs (topups, withdrawals), so a job's failures are reported where the worker reports.
 */
export interface Services {
  readonly users: ReturnType<typeof createUsers>
  readonly apiKeys: ReturnType<typeof createApiKeys>
  readonly loginDevices: ReturnType<typeof createLoginDevices>
  readonly agents: ReturnType<typeof createAgents>
  readonly agentKeys: ReturnType<typeof createAgentKeys>
  readonly allowlist: ReturnType<typeof createAllowlist>
  readonly history: ReturnType<typeof createHistory>
  readonly publishing: ReturnType<typeof createPublishing>
  readonly agentPayments: ReturnType<typeof createAgentPayments>
  readonly agentChannelRefunds: ReturnType<typeof createAgentChannelRefunds>
  readonly agentChannelWithdrawals: ReturnType<typeof createAgentChannelWithdrawals>
  readonly topups: Topups
  readonly withdrawals: Withdrawals
  readonly curatedAdmin: ReturnType<typeof createCuratedAdmin>
  readonly webhooks: ReturnType<typeof createWebhooks>
  /** the deferred scheme's facilitator; only where config.deferredEscrowAddress is set (it throws otherwise) */
  readonly deferredFacilitator: ReturnType<typeof createDeferredFacilitator>
}

/** What createServices needs from the deps: everything but the services themselves. */
type ServiceDeps = Omit<Deps, 'services'>

function createServices(deps: Deps): Services & { close(): Promise<void> } {
  const { db, config } = deps
  const log = processLogger(config.logLevel)
  const built = new Map<keyof Services, unknown>()
  const lazy = <K extends keyof Services>(name: K, make: () => Services[K]) => ({
    get: () => (built.get(name) ?? built.set(name, make()).get(name)) as Services[K],
    enumerable: true,
  })
  const services = Object.defineProperties({} as Services, {
    users: lazy('users', () => createUsers({ db })),
    apiKeys: lazy('apiKeys', () => createApiKeys({ db, deployment: config.deployment })),
    loginDevices: lazy('loginDevices', () => createLoginDevices({ redis: deps.redis, key: deps.key })),
    agents: lazy('agents', () => createAgents({ db, masterKey: () => requireMasterKey(config) })),
    agentKeys: lazy('agentKeys', () => createAgentKeys({ db, deployment: config.deployment })),
    allowlist: lazy('allowlist', () => createAllowlist({ db })),
    history: lazy('history', () =>
      createHistory({
        db: deps.readDb ?? db,
        databaseUrl: config.databaseReadUrl ?? config.databaseUrl,
        databaseSchema: config.databaseSchema,
      }),
    ),
    publishing: lazy('publishing', () => createPublishing(deps)),
    agentPayments: lazy('agentPayments', () =>
      createAgentPayments({
        ...deps,
        onError: (err) =>
          log.warn({ err }, 'agent key cache: LISTEN connection lost; look-ups go to Postgres until it is back'),
      }),
    ),
    agentChannelRefunds: lazy('agentChannelRefunds', () => createAgentChannelRefunds(deps)),
    agentChannelWithdrawals: lazy('agentChannelWithdrawals', () => createAgentChannelWithdrawals(deps)),
    topups: lazy('topups', () => createTopups(deps, { logger: log })),
    withdrawals: lazy('withdrawals', () => createWithdrawals(deps, { logger: log })),
    curatedAdmin: lazy('curatedAdmin', () => createCuratedAdmin(deps)),
    webhooks: lazy('webhooks', () => createWebhooks(deps)),
    deferredFacilitator: lazy('deferredFacilitator', () => createDeferredFacilitator(deps, { logger: log })),
  })
  return Object.assign(services, {
    async close() {
      const closing = [...built.values()].map((s) => (s as { close?: () => Promise<void> }).close?.())
      built.clear()
      await Promise.allSettled(closing)
    },
  })
}

/** each services registry → the deps object it was built from */
const builtFor = new WeakMap<Services, Deps>()

/**
 * The deps an app or the workers run on, with services built from these very deps. A caller may
 * hand a role a copy with one part replaced (`{ ...deps, config: { ...deps.config, deployment:
 * 'production' } }`, another chain client): the copy carries the original's services, built from
 * the original's config and clients, so it gets services of its own here; `close` closes them (a
 * no-op when the deps already own their services).
 */
export function withOwnServices(deps: Deps): { deps: Deps; close(): Promise<void> } {
  if (builtFor.get(deps.services) === deps) return { deps, close: async () => {} }
  const own = { ...deps } as Deps
  const services = createServices(own)
  own.services = services
  builtFor.set(services, own)
  return { deps: own, close: () => services.close() }
}

/** `Deps.key` for a deployment's Redis prefix */
export function redisKeys(prefix: string): Deps['key'] {
  return (...parts) => [prefix, ...parts].join(':')
}

export function createDeps(config: Readonly<Config>): Deps {
  if (!config.rpcUrl) throw new Error('createDeps needs config.rpcUrl (the dev entry starts the embedded chain first)')
  const db = createDb({ databaseUrl: config.databaseUrl, schema: config.databaseSchema })
  const readDb = config.databaseReadUrl
    ? createDb({ databaseUrl: config.databaseReadUrl, schema: config.databaseSchema })
    : db
  const redis = createRedisClient(config.redisUrl, {
    lazyConnect: false,
    maxRetriesPerRequest: 2,
    // keep trying to reconnect forever, but fail commands quickly while down
    enableOfflineQueue: true,
    retryStrategy: (times) => Math.min(times * 200, 2000),
  })
  // connection errors surface through commands and /readyz; the emitter must not crash the process
  redis.on('error', () => {})
  const chain = createPublicClient({
    transport: http(config.rpcUrl, { timeout: 10_000, retryCount: 1 }),
  }) as PublicClient
  let closed = false
  const base: ServiceDeps = {
    config,
    db,
    readDb,
    redis,
    chain,
    key: redisKeys(config.redisPrefix),
    async close() {
      if (closed) return
      closed = true
      await services.close()
      await Promise.allSettled([
        db.destroy(),
        readDb === db ? undefined : readDb.destroy(),
        redis.quit().catch(() => redis.disconnect()),
      ])
    },
  }
  const deps = base as Deps
  const services = createServices(deps)
  deps.services = services
  builtFor.set(services, deps)
  return deps
}

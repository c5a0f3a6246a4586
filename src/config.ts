/**
 * The whole environment, parsed once at process start into a frozen object.
 * Every problem is collected, so a bad deployment learns everything wrong in one go.
 * The schema is grouped by area under src/config/; this file assembles it.
 *
 * @example
 *   const config = loadConfig(process.env) // throws ConfigError listing every invalid variable
 */

import { readCoreSettings } from './config/core.js'
import { ConfigError } from './config/config-error.js'
import { databaseConfig } from './config/database.js'
import { EnvReader, type Env } from './config/env-reader.js'
import { handlersConfig } from './config/handlers.js'
import { handlerProvidersConfig } from './config/providers.js'
import { batchClaimConfig, deferredConfig, schemesConfig } from './config/schemes.js'
import { settlementConfig } from './config/settlement.js'
import type { Config } from './config/types.js'
import { webhooksConfig } from './config/webhooks.js'
import { x402Config } from './config/x402.js'

export { CHAINS } from './config/chains.js'
export { ConfigError } from './config/config-error.js'
export { AAVE_V3_POOL_BASE } from './config/providers.js'
export type { Config, Deployment } from './config/types.js'

/** Parse and validate the environment. Throws ConfigError listing every problem. */
export function loadConfig(env: Env = process.env): Readonly<Config> {
  // each area reads its variables in turn: the problems list in this order
  const r = new EnvReader(env)
  const core = readCoreSettings(r)
  const { deployment } = core
  const config: Config = {
    deployment,
    chain: core.chain,
    apiKeyPrefix: deployment === 'production' ? 'sk_live_' : 'sk_test_',
    ...databaseConfig(r, core.databaseSchema),
    redisUrl: core.redisUrl,
    redisPrefix: core.redisPrefix,
    rpcUrl: core.rpcUrl,
    relayerKeys: core.relayerKeys,
    receiverAddress: core.receiverAddress,
    ...schemesConfig(r, deployment, core),
    masterKey: core.masterKey,
    operatorToken: r.optional('TOLLGATE_OPERATOR_TOKEN'),
    allowPrivateUpstreams: r.oneOf('TOLLGATE_ALLOW_PRIVATE_UPSTREAMS', ['true', 'false'] as const, 'false') === 'true',
    webhooks: webhooksConfig(r),
    smtpUrl: r.optional('TOLLGATE_SMTP_URL'),
    emailFrom: r.str('TOLLGATE_EMAIL_FROM', 'Tollgate <alerts@tollgate.invalid>'),
    signup:
      r.oneOf('TOLLGATE_SIGNUP', ['open', 'closed'] as const, deployment === 'sandbox' ? 'open' : 'closed') === 'open',
    baseUrl: core.baseUrl,
    proxyUrl: core.proxyUrl,
    dashboardUrl: core.dashboardUrl,
    host: r.str('HOST', '127.0.0.1'),
    webPort: core.webPort,
    proxyPort: core.proxyPort,
    trustProxy: r.trustProxy('TRUST_PROXY'),
    logLevel: r.oneOf('LOG_LEVEL', ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const, 'info'),
    x402: x402Config(r, core.maxTimeoutSeconds, core.settlementMode),
    deferred: deferredConfig(r),
    batchClaim: batchClaimConfig(r, deployment),
    settlement: settlementConfig(r, core),
    handlers: handlersConfig(r, core.handlerAddresses),
    handlerProviders: handlerProvidersConfig(r, core.walletScore, core.rpcUrl),
  }
  if (r.problems.length > 0) throw new ConfigError(r.problems)
  return deepFreeze(config)
}

function deepFreeze<T>(o: T): Readonly<T> {
  if (o && typeof o === 'object' && !Buffer.isBuffer(o)) {
    for (const v of Object.values(o)) deepFreeze(v)
    Object.freeze(o)
  }
  return o
}

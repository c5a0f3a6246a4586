import cookie from '@fastify/cookie'
import type { FastifyInstance, FastifyPluginAsync } from 'fastify'
import type { Deps } from '../../../deps.js'
import { requireMasterKey } from '../../../secrets/wallet-crypto.js'
import { apiKeyAuth } from '../../plugins/api-key-auth.js'
import { idempotency } from '../../plugins/idempotency.js'
import { rateLimit } from '../../plugins/rate-limit.js'
import { agentRoutes } from './agents.js'
import { approvalRoutes } from './approvals.js'
import { apiKeyRoutes } from './api-keys.js'
import { fundingWalletRoutes } from './funding-wallet.js'
import { historyRoutes } from './history.js'
import { insightRoutes } from './insights.js'
import { paymentRoutes } from './payments.js'
import { sellerRoutes } from './sellers.js'
import { sessionRoutes } from './session.js'
import { signupRoutes } from './signup.js'
import { topUpRoutes } from './top-ups.js'
import { webhookRoutes } from './webhooks.js'
import { withdrawalRoutes } from './withdrawals.js'
import { RATE_LIMIT_PER_MINUTE, type V1Context } from './context.js'

export interface V1Options {
  /** requests per minute per API key or session (default 600) */
  rateLimitPerMinute?: number
  /** the login limit (default 10): per minute per client address, per 15 min per (email, client), 3× per 15 min per email (session.ts) */
  loginPerMinute?: number
}

/**
 * The user-level API under /v1: authenticated by API key (Bearer) or dashboard session cookie,
 * rate limited per credential, Idempotency-Key on creating POSTs.
 *
 * @example
 *   await app.register(v1Routes(deps), { prefix: '/v1' })
 */
export function v1Routes(deps: Deps, opts: V1Options = {}): FastifyPluginAsync {
  return async (app: FastifyInstance) => {
    const { users, apiKeys } = deps.services
    const ctx: V1Context = { deps, limiter: { redis: deps.redis, key: deps.key }, loginMax: opts.loginPerMinute ?? 10 }
    await app.register(cookie)
    await app.register(apiKeyAuth, { apiKeys, users })
    await app.register(rateLimit, {
      redis: deps.redis,
      key: deps.key,
      max: opts.rateLimitPerMinute ?? RATE_LIMIT_PER_MINUTE,
      windowSeconds: 60,
      identify: (r) => (r.principal ? `${r.principal.via}:${r.principal.credentialId}` : undefined),
    })
    await app.register(idempotency, {
      redis: deps.redis,
      key: deps.key,
      masterKey: () => requireMasterKey(deps.config),
      owner: (r) => r.principal?.userId,
    })
    await app.register(async (a) => sessionRoutes(a, { ...ctx, users }))
    await app.register(async (a) => apiKeyRoutes(a, ctx))
    await app.register(async (a) => agentRoutes(a, ctx))
    await app.register(async (a) => fundingWalletRoutes(a, ctx))
    await app.register(async (a) => historyRoutes(a, ctx))
    await app.register(async (a) => sellerRoutes(a, ctx))
    await app.register(async (a) => topUpRoutes(a, ctx))
    await app.register(async (a) => signupRoutes(a, { ...ctx, users }))
    await app.register(async (a) => withdrawalRoutes(a, ctx))
    await app.register(async (a) => insightRoutes(a, ctx))
    await app.register(async (a) => paymentRoutes(a, ctx))
    await app.register(async (a) => webhookRoutes(a, deps.services.webhooks))
    await app.register(async (a) => approvalRoutes(a, ctx))
  }
}

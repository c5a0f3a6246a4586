import type { FastifyInstance, FastifyPluginAsync } from 'fastify'
import type { Deps } from '../../../deps.js'
import { appError } from '../../../errors.js'
import { type AgentRow } from '../../../services/agent-payments/agent-payments.js'
import { requireMasterKey } from '../../../secrets/wallet-crypto.js'
import { agentPaymentIdOf } from '../../../services/accounts/agent-payment-ref.js'
import { idempotency } from '../../plugins/idempotency.js'
import { rateLimit } from '../../plugins/rate-limit.js'
import {
  escrowDepositBody,
  escrowFlushBody,
  idParam,
  outcomeBody,
  payBody,
  signInBody,
} from './agent-payments-schemas.js'
import { RATE_LIMIT_PER_MINUTE } from './context.js'
import { sellerRoutes } from './sellers.js'

declare module 'fastify' {
  interface FastifyRequest {
    agent: AgentRow | null
  }
}

const BODY_LIMIT = 64 * 1024

type Payments = Deps['services']['agentPayments']
type PayBody = Record<
  | 'url'
  | 'method'
  | 'challenge'
  | 'dry_run'
  | 'payment_identifier'
  | 'deposit_amount'
  | 'upto'
  | 'batch_settlement'
  | 'approval_id',
  unknown
>
const tags = ['agent payments']

/**
 * Agent-scoped actions under /v1/agent, authenticated by an agent key
 * (`Authorization: Bearer ak_…`), not an API key: the buyer side of x402 (payments), and the
 * agent's own paid endpoints (publishing, limited to the namespaces linked to the agent).
 *
 * @example
 *   await app.register(agentPaymentRoutes(deps), { prefix: '/v1/agent' })
 */
export function agentPaymentRoutes(deps: Deps, opts: { sweepMs?: number } = {}): FastifyPluginAsync {
  return async (app: FastifyInstance) => {
    const payments = deps.services.agentPayments
    authenticateAgents(app, payments, opts.sweepMs ?? 30_000)
    await app.register(agentPublishingRoutes(deps))
    paymentRoutes(app, payments)
    walletRoutes(app, payments)
    channelRefundRoutes(app, deps)
    channelWithdrawRoutes(app, deps)
    statusRoutes(app, deps, payments)
  }
}

/** every request carries an agent key (request.agent); `payments.sweep()` runs every sweepMs (0: never) */
function authenticateAgents(app: FastifyInstance, payments: Payments, sweepMs: number) {
  app.decorateRequest('agent', null)
  app.addHook('onRequest', async (request) => {
    const m = /^Bearer[ ]+(\S+)\s*$/i.exec(request.headers.authorization ?? '')
    if (!m) throw appError('missing_api_key', {}, { headers: { 'www-authenticate': 'Bearer' } })
    request.agent = await payments.authenticate(m[1]!).catch((err) => {
      throw Object.assign(err, { headers: { 'www-authenticate': 'Bearer error="invalid_token"' } })
    })
  })
  if (sweepMs > 0) {
    const timer = setInterval(
      () => void payments.sweep().catch((err) => app.log.warn({ err }, 'agent payment sweep failed')),
      sweepMs,
    )
    timer.unref()
    app.addHook('onClose', async () => clearInterval(timer))
  }
}

/** the agent's own endpoints: the seller routes, seeing only the namespaces linked to this agent */
function agentPublishingRoutes(deps: Deps) {
  return async (a: FastifyInstance) => {
    // the limit of /v1 (per credential there; here per agent), and Idempotency-Key
    // on creating POSTs, each agent's answers kept apart from its user's
    await a.register(rateLimit, {
      redis: deps.redis,
      key: deps.key,
      max: RATE_LIMIT_PER_MINUTE,
      windowSeconds: 60,
      name: 'v1-agent-publishing',
      identify: (r) => (r.agent ? `agent:${r.agent.id}` : undefined),
    })
    await a.register(idempotency, {
      redis: deps.redis,
      key: deps.key,
      masterKey: () => requireMasterKey(deps.config),
      owner: (r) => (r.agent ? `agent:${r.agent.id}` : undefined),
    })
    await sellerRoutes(
      a,
      { deps },
      { scope: (r) => ({ userId: r.agent!.user_id, agentAddress: r.agent!.address }), tags: ['agent publishing'] },
    )
  }
}

/** POST /payments, /sign-in and /payments/:id/outcome: pay (or sign in) from the agent wallet, and report the outcome */
function paymentRoutes(app: FastifyInstance, payments: Payments) {
  app.post<{ Body: PayBody }>(
    '/payments',
    {
      bodyLimit: BODY_LIMIT,
      schema: {
        tags,
        summary: 'Pay a 402 challenge from the agent wallet (or preview it with dry_run)',
        body: payBody,
      },
    },
    async (request, reply) => {
      const r = await payments.pay(request.agent!, request.body)
      // 202: the agent's approval policy holds it for the owner (approval_id to poll, then retry with)
      return reply.code(r.object === 'agent_payment' ? 201 : r.object === 'approval' ? 202 : 200).send(r)
    },
  )
  app.post<{ Body: { url?: unknown; method?: unknown; challenge?: unknown } }>(
    '/sign-in',
    {
      bodyLimit: BODY_LIMIT,
      schema: {
        tags,
        summary:
          'Sign in with the agent wallet instead of paying (x402 sign-in-with-x), where the seller offers it: the SIGN-IN-WITH-X header to send',
        description:
          'For an endpoint with paid access that this wallet already paid for. The challenge must declare `sign-in-with-x` bound to the origin of `url`, and the agent must be allowed to pay that seller. Nothing is reserved or spent; the seller decides whether the wallet holds access.',
        body: signInBody,
      },
    },
    async (request) => payments.signIn(request.agent!, request.body),
  )
  app.post<{ Params: { id: string }; Body: { status?: unknown; payment_response?: unknown } }>(
    '/payments/:id/outcome',
    {
      bodyLimit: 16 * 1024,
      schema: {
        tags,
        summary:
          'Report what the seller answered; the amount leaves the caps only when the platform can prove the payment will never be collected',
        description:
          '200: decided (`accepted`, or `rejected` when the proxy voided the payment or never recorded it and now refuses it). 202: the report is kept but proves nothing; the payment stays `reserved` and counted until settlement or expiry (`counted_until`), and `reason` says why.',
        params: idParam,
        body: outcomeBody,
      },
    },
    async (request, reply) => {
      const r = await payments.outcome(request.agent!.id, request.params.id, request.body)
      return reply.code(r.status === 'reserved' ? 202 : 200).send(r)
    },
  )
}

/** the agent wallet's channels and escrow accounts: read, flush, deposit */
function walletRoutes(app: FastifyInstance, payments: Payments) {
  app.get(
    '/channels',
    {
      schema: {
        tags,
        summary:
          "The agent wallet's batch-settlement channels: deposited, balance, charged, claimed, refundable and whether a withdrawal started",
      },
    },
    async (request) => payments.channels(request.agent!),
  )
  app.get(
    '/escrow',
    {
      schema: {
        tags,
        summary:
          "The agent wallet's escrow accounts (deferred): balance, thawing amount and end, outstanding vouchers per seller",
      },
    },
    async (request) => payments.escrow(request.agent!),
  )
  app.post<{ Body: { seller?: unknown } }>(
    '/escrow/flush',
    {
      bodyLimit: 4096,
      schema: {
        tags,
        summary:
          "Withdraw what finished thawing in the agent's escrow account with a seller to its wallet, and start thawing the rest (gasless)",
        body: escrowFlushBody,
      },
    },
    async (request) => payments.flushEscrow(request.agent!, request.body),
  )
  app.post<{ Body: { seller?: unknown; amount?: unknown } }>(
    '/escrow/deposit',
    {
      bodyLimit: 4096,
      schema: {
        tags,
        summary:
          'Deposit USDC from the agent wallet into its escrow account with a seller (gasless; not counted against the caps)',
        body: escrowDepositBody,
      },
    },
    async (request) => payments.depositEscrow(request.agent!, request.body),
  )
}

/** the budget, a held payment's approval, one payment */
function statusRoutes(app: FastifyInstance, deps: Deps, payments: Payments) {
  app.get(
    '/',
    {
      schema: {
        tags,
        summary: "The agent's budget: caps, spent today and this month, headroom, balance, unsettled, allowlist",
      },
    },
    async (request) => payments.status(request.agent!),
  )
  app.get<{ Params: { id: string } }>(
    '/approvals/:id',
    {
      schema: {
        tags,
        summary:
          "A held payment's approval: pending until the owner decides; approved: retry the payment with approval_id",
        params: idParam,
      },
    },
    async (request) => payments.approvals.forAgent(request.agent!.id, request.params.id),
  )
  app.get<{ Params: { id: string } }>(
    '/payments/:id',
    {
      schema: {
        tags,
        summary:
          "A payment signed for this agent, with its settlement when known: the ledger's payment id (tollgate payments list) or the agent payment's (the pay answer)",
        params: idParam,
      },
    },
    async (request) =>
      payments.get(request.agent!.id, await agentPaymentIdOf(deps.db, request.agent!, request.params.id)),
  )
}

/** POST /channels/:id/refund: the agent's cooperative refund of its batch-settlement channel */
function channelRefundRoutes(app: FastifyInstance, deps: Deps) {
  app.post<{ Params: { id: string }; Body: { amount?: unknown } | undefined }>(
    '/channels/:id/refund',
    {
      bodyLimit: 4096,
      schema: {
        tags,
        summary:
          "Cooperative refund of the agent's batch-settlement channel: the charged amount claimed, the rest (or `amount`) back to the agent wallet, now and gasless",
        params: { type: 'object', required: ['id'], properties: { id: { type: 'string', maxLength: 66 } } },
        body: {
          type: ['object', 'null'],
          additionalProperties: false,
          properties: { amount: { type: 'string', maxLength: 40, description: 'atomic USDC; default all' } },
        },
      },
    },
    async (request) =>
      deps.services.agentChannelRefunds.refund(request.agent!, request.params.id, request.body ?? {}, request.log),
  )
}

/** POST /channels/:id/withdraw: the agent's timed withdrawal of its batch-settlement channel */
function channelWithdrawRoutes(app: FastifyInstance, deps: Deps) {
  app.post<{ Params: { id: string } }>(
    '/channels/:id/withdraw',
    {
      bodyLimit: 4096,
      schema: {
        tags,
        summary:
          "Timed withdrawal of the agent's batch-settlement channel, from the agent wallet (its ETH pays the gas): the first call sends initiateWithdraw for what is unclaimed, a call once the channel's withdrawal delay is over sends finalizeWithdraw; in between it answers when it is due",
        params: { type: 'object', required: ['id'], properties: { id: { type: 'string', maxLength: 66 } } },
      },
    },
    async (request) => deps.services.agentChannelWithdrawals.withdraw(request.agent!, request.params.id, request.log),
  )
}

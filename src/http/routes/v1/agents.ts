import type { FastifyInstance } from 'fastify'
import { agentPaymentIdOf } from '../../../services/accounts/agent-payment-ref.js'
import { name } from '../../../services/accounts/validate.js'
import { readBalances } from '../../../services/wallets/balances.js'
import type { V1Context } from './context.js'
import { addressParam, authErrors, errorResponse, idempotencyHeader, list, noContent, ok } from './schemas.js'
import { approvalPolicySchema, capsSchema, createAgentBody, topUpSchema, updateAgentBody } from './agents-schemas.js'

type AgentBody = { name?: unknown; spend_caps?: unknown; top_up?: unknown; approval_policy?: unknown }
type P = { Params: { address: string } }

const tags = ['agents']

/** Agents (custodial wallets), their keys, allowlists, caps, top-up settings and balances. */
export async function agentRoutes(app: FastifyInstance, ctx: V1Context) {
  agentRecordRoutes(app, ctx)
  agentSettingRoutes(app, ctx)
  agentWalletRoutes(app, ctx)
  agentKeyRoutes(app, ctx)
  allowlistRoutes(app, ctx)
}

/** /agents and /agents/:address: create, list, get, update */
function agentRecordRoutes(app: FastifyInstance, ctx: V1Context) {
  const { agents } = ctx.deps.services
  app.post<{ Body: AgentBody }>(
    '/agents',
    {
      config: { idempotent: true },
      schema: {
        tags,
        summary: 'Create an agent; the platform creates its wallet',
        headers: idempotencyHeader,
        body: createAgentBody,
        response: { 201: ok('the agent'), 400: errorResponse, ...authErrors },
      },
    },
    async (request, reply) => reply.code(201).send(await agents.create(request.principal!.userId, request.body)),
  )
  app.get(
    '/agents',
    { schema: { tags, summary: 'List agents', response: { 200: list('agents, oldest first'), ...authErrors } } },
    async (request) => ({
      object: 'list',
      data: await agents.list(request.principal!.userId),
    }),
  )
  app.get<P>(
    '/agents/:address',
    {
      schema: {
        tags,
        summary: 'Get an agent',
        params: addressParam,
        response: { 200: ok('the agent'), ...authErrors },
      },
    },
    async (request) => agents.get(request.principal!.userId, request.params.address),
  )
  app.patch<P & { Body: AgentBody }>(
    '/agents/:address',
    {
      schema: {
        tags,
        summary: 'Update name, spend caps, approval policy and top-up settings (each field optional)',
        params: addressParam,
        body: updateAgentBody,
        response: { 200: ok('the agent'), 400: errorResponse, ...authErrors },
      },
    },
    async (request) => agents.update(request.principal!.userId, request.params.address, request.body ?? {}),
  )
}

/** /agents/:address/{spend-caps,top-up,approval-policy}: read and set one group of settings */
function agentSettingRoutes(app: FastifyInstance, ctx: V1Context) {
  const { agents } = ctx.deps.services
  for (const [path, field, schema, summary] of [
    ['spend-caps', 'spend_caps', capsSchema, 'spend caps'],
    ['top-up', 'top_up', topUpSchema, 'top-up settings'],
    ['approval-policy', 'approval_policy', approvalPolicySchema, 'approval policy'],
  ] as const) {
    app.get<P>(
      `/agents/:address/${path}`,
      {
        schema: {
          tags,
          summary: `Get the ${summary}`,
          params: addressParam,
          response: { 200: ok(summary), ...authErrors },
        },
      },
      async (request) => {
        const a = await agents.get(request.principal!.userId, request.params.address)
        return { object: field, agent: a.address, ...a[field] }
      },
    )
    app.put<P & { Body: Record<string, unknown> }>(
      `/agents/:address/${path}`,
      {
        schema: {
          tags,
          summary: `Set the ${summary} (fields left out keep their value)`,
          params: addressParam,
          body: schema,
          response: { 200: ok(summary), 400: errorResponse, ...authErrors },
        },
      },
      async (request) => {
        const a = await agents.update(request.principal!.userId, request.params.address, {
          [field]: request.body ?? {},
        })
        return { object: field, agent: a.address, ...a[field] }
      },
    )
  }
}

/** the agent wallet: its balances, and one of its payments */
function agentWalletRoutes(app: FastifyInstance, ctx: V1Context) {
  const { agents } = ctx.deps.services
  app.get<P>(
    '/agents/:address/balance',
    {
      schema: {
        tags,
        summary: 'USDC and ETH balance of the agent wallet',
        params: addressParam,
        response: { 200: ok('balances'), 503: errorResponse, ...authErrors },
      },
    },
    async (request) => {
      const a = await agents.find(request.principal!.userId, request.params.address)
      return readBalances(ctx.deps, a.address as `0x${string}`)
    },
  )
  app.get<{ Params: { address: string; id: string } }>(
    '/agents/:address/payments/:id',
    {
      schema: {
        tags,
        summary:
          "One of the agent's payments, with its settlement when known (GET /v1/agent/payments/{id} with the API key): the ledger's payment id or the agent payment's",
        params: {
          type: 'object',
          properties: { address: { type: 'string' }, id: { type: 'string', maxLength: 64 } },
        },
        response: { 200: ok('the agent payment'), ...authErrors },
      },
    },
    async (request) => {
      const a = await agents.find(request.principal!.userId, request.params.address)
      const id = await agentPaymentIdOf(ctx.deps.db, a, request.params.id)
      return ctx.deps.services.agentPayments.get(a.id, id)
    },
  )
}

/** /agents/:address/keys: create, list, revoke */
function agentKeyRoutes(app: FastifyInstance, ctx: V1Context) {
  const { agents, agentKeys } = ctx.deps.services
  app.post<P & { Body: { name?: string } }>(
    '/agents/:address/keys',
    {
      config: { idempotent: true },
      schema: {
        tags: ['agent keys'],
        summary: 'Create an agent key; the answer carries `secret` once',
        params: addressParam,
        headers: idempotencyHeader,
        body: { type: 'object', properties: { name: { type: 'string', maxLength: 100 } } },
        response: { 201: ok('the agent key with its secret (shown only here)'), ...authErrors },
      },
    },
    async (request, reply) => {
      const a = await agents.find(request.principal!.userId, request.params.address)
      return reply
        .code(201)
        .send(await agentKeys.create(a, request.body?.name === undefined ? 'default' : name('name', request.body.name)))
    },
  )
  app.get<P>(
    '/agents/:address/keys',
    {
      schema: {
        tags: ['agent keys'],
        summary: 'List agent keys',
        params: addressParam,
        response: { 200: list('agent keys'), ...authErrors },
      },
    },
    async (request) => ({
      object: 'list',
      data: await agentKeys.list(await agents.find(request.principal!.userId, request.params.address)),
    }),
  )
  app.delete<{ Params: { address: string; id: string } }>(
    '/agents/:address/keys/:id',
    {
      schema: {
        tags: ['agent keys'],
        summary: 'Revoke an agent key',
        params: { type: 'object', properties: { address: { type: 'string' }, id: { type: 'string' } } },
        response: { 200: ok('the revoked key'), ...authErrors },
      },
    },
    async (request) =>
      agentKeys.revoke(await agents.find(request.principal!.userId, request.params.address), request.params.id),
  )
}

/** /agents/:address/allowlist: add, list, remove */
function allowlistRoutes(app: FastifyInstance, ctx: V1Context) {
  const { agents, allowlist } = ctx.deps.services
  app.post<P & { Body: { kind?: unknown; value?: unknown } }>(
    '/agents/:address/allowlist',
    {
      config: { idempotent: true },
      schema: {
        tags: ['allowlist'],
        summary: 'Allow a seller (by pay_to address, seller namespace or host); an empty list allows all',
        params: addressParam,
        headers: idempotencyHeader,
        body: {
          type: 'object',
          required: ['kind', 'value'],
          properties: { kind: { type: 'string', enum: ['pay_to', 'namespace', 'host'] }, value: { type: 'string' } },
        },
        response: { 201: ok('the entry'), 400: errorResponse, ...authErrors },
      },
    },
    async (request, reply) =>
      reply
        .code(201)
        .send(await allowlist.add(await agents.find(request.principal!.userId, request.params.address), request.body)),
  )
  app.get<P>(
    '/agents/:address/allowlist',
    {
      schema: {
        tags: ['allowlist'],
        summary: 'List allowlist entries',
        params: addressParam,
        response: { 200: list('entries'), ...authErrors },
      },
    },
    async (request) => ({
      object: 'list',
      data: await allowlist.list(await agents.find(request.principal!.userId, request.params.address)),
    }),
  )
  app.delete<{ Params: { address: string; id: string } }>(
    '/agents/:address/allowlist/:id',
    {
      schema: {
        tags: ['allowlist'],
        summary: 'Remove an allowlist entry',
        params: { type: 'object', properties: { address: { type: 'string' }, id: { type: 'string' } } },
        response: { 204: noContent, ...authErrors },
      },
    },
    async (request, reply) => {
      await allowlist.remove(await agents.find(request.principal!.userId, request.params.address), request.params.id)
      return reply.code(204).send()
    },
  )
}

import { Ajv } from 'ajv'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { type WithdrawalBody, type WithdrawalTarget } from '../../../services/withdrawals/withdrawals.js'
import type { V1Context } from './context.js'
import { addressParam, atomic, authErrors, errorResponse, ok } from './schemas.js'

const headers = {
  type: 'object',
  properties: {
    'idempotency-key': {
      type: 'string',
      description:
        'required: 1–255 characters, new for each withdrawal; a retry with the same key and body answers the first withdrawal (200) and sends nothing again',
    },
  },
} as const
// money out is validated as docs/api.md states it, without the app's coercion and removal: a JSON
// number amount or an unknown field is refused (400), never turned into a string or dropped
const strict = new Ajv({
  coerceTypes: false,
  removeAdditional: false,
  useDefaults: true,
  allErrors: false,
  strict: false,
})
const validatorCompiler = ({ schema }: { schema: object }) => strict.compile(schema)

const body = (assets: readonly string[]) =>
  ({
    type: 'object',
    required: ['to', 'amount'],
    additionalProperties: false,
    properties: {
      to: { type: 'string', description: 'the address the funds go to (0x…)' },
      amount: { ...atomic, description: 'USDC atomic units (6 decimals: "1000000" = 1 USDC), or wei for ETH' },
      asset: { type: 'string', enum: assets, default: 'USDC' },
    },
  }) as const
const example = {
  object: 'withdrawal',
  id: '6f1c…',
  status: 'pending',
  source: 'agent',
  to: '0x…',
  amount: '1000000',
  asset: 'USDC',
  tx_hash: null,
  created_at: '2026-11-24T09:00:00.000Z',
}

/**
 * Money out (docs/api.md, "Withdrawals"): the owner sends USDC from an agent wallet or the funding
 * wallet (or the funding wallet's ETH) to an address, with a required Idempotency-Key; progress at
 * GET /v1/withdrawals/{id}. These routes keep their own idempotency in Postgres (the key is unique
 * per user there), so a replay is the recorded withdrawal, 200.
 */
export async function withdrawalRoutes(app: FastifyInstance, ctx: V1Context) {
  const { withdrawals } = ctx.deps.services
  // each new withdrawal is sent at once, beside the answer; the worker's sweep takes over what this leaves
  const sending = new Set<Promise<unknown>>()
  app.addHook('onClose', async () => void (await Promise.allSettled([...sending])))
  const send = (id: string) => {
    const p = withdrawals
      .process(id)
      .catch((err) => app.log.warn({ err, withdrawal: id }, 'withdrawal send failed; the sweep retries it'))
    sending.add(p)
    void p.finally(() => sending.delete(p))
  }
  const tags = ['withdrawals']
  const responses = {
    200: ok('the withdrawal this Idempotency-Key made before (nothing sent again)', example),
    201: ok('the withdrawal, recorded and being sent', example),
    400: errorResponse,
    409: errorResponse,
    503: errorResponse,
    ...authErrors,
  }

  async function handle(
    request: FastifyRequest<{ Body: WithdrawalBody }>,
    reply: FastifyReply,
    target: WithdrawalTarget,
  ) {
    const { withdrawal, replayed } = await withdrawals.request(
      request.principal!.userId,
      target,
      request.body,
      request.headers['idempotency-key'],
    )
    if (replayed) return reply.header('idempotent-replayed', 'true').code(200).send(withdrawal)
    send(withdrawal.id)
    return reply.code(201).send(withdrawal)
  }

  app.post<{ Params: { address: string }; Body: WithdrawalBody }>(
    '/agents/:address/withdrawals',
    {
      schema: {
        tags,
        summary: 'Send USDC from the agent wallet to an address (Idempotency-Key required)',
        params: addressParam,
        headers,
        body: body(['USDC']),
        response: responses,
      },
      validatorCompiler,
    },
    (request, reply) => handle(request, reply, { source: 'agent', address: request.params.address }),
  )
  app.post<{ Body: WithdrawalBody }>(
    '/funding-wallet/withdrawals',
    {
      schema: {
        tags,
        summary: 'Send USDC, or the ETH left, from the funding wallet to an address (Idempotency-Key required)',
        headers,
        body: body(['USDC', 'ETH']),
        response: responses,
      },
      validatorCompiler,
    },
    (request, reply) => handle(request, reply, { source: 'funding_wallet' }),
  )
  app.get<{ Params: { id: string } }>(
    '/withdrawals/:id',
    {
      schema: {
        tags,
        summary: 'A withdrawal and its progress (pending → confirmed or failed)',
        params: { type: 'object', required: ['id'], properties: { id: { type: 'string' } } },
        response: { 200: ok('the withdrawal', example), ...authErrors },
      },
    },
    (request) => withdrawals.get(request.principal!.userId, request.params.id),
  )
}

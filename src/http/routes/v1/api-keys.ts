import type { FastifyInstance } from 'fastify'
import { name } from '../../../services/accounts/validate.js'
import type { V1Context } from './context.js'
import { authErrors, idempotencyHeader, list, ok } from './schemas.js'

/** API keys of the caller's user: create (secret once), list, revoke. */
export async function apiKeyRoutes(app: FastifyInstance, ctx: V1Context) {
  const keys = ctx.deps.services.apiKeys
  app.post<{ Body: { name: string } }>(
    '/api-keys',
    {
      config: { idempotent: true },
      schema: {
        tags: ['api keys'],
        summary: 'Create an API key; the answer carries `secret` once',
        headers: idempotencyHeader,
        body: { type: 'object', required: ['name'], properties: { name: { type: 'string', maxLength: 100 } } },
        response: { 201: ok('the key with its secret (shown only here)'), ...authErrors },
      },
    },
    async (request, reply) =>
      reply.code(201).send(await keys.create(request.principal!.userId, name('name', request.body.name))),
  )
  app.get(
    '/api-keys',
    {
      schema: {
        tags: ['api keys'],
        summary: 'List API keys (never their secrets)',
        response: { 200: list('API keys, newest first'), ...authErrors },
      },
    },
    async (request) => ({
      object: 'list',
      data: await keys.list(request.principal!.userId),
    }),
  )
  app.delete<{ Params: { id: string } }>(
    '/api-keys/:id',
    {
      schema: {
        tags: ['api keys'],
        summary: 'Revoke an API key: every later call with it gets 401, on every process',
        params: { type: 'object', required: ['id'], properties: { id: { type: 'string' } } },
        response: { 200: ok('the revoked key'), ...authErrors },
      },
    },
    async (request) => keys.revoke(request.principal!.userId, request.params.id),
  )
}

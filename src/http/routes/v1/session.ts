import type { FastifyInstance } from 'fastify'
import { appError } from '../../../errors.js'
import type { UsersService } from '../../../services/accounts/users.js'
import { SESSION_COOKIE } from '../../plugins/api-key-auth.js'
import { hitRateLimit } from '../../plugins/rate-limit.js'
import type { V1Context } from './index.js'
import { errorResponse, noContent, ok } from './schemas.js'

/** Dashboard login: email + password → httpOnly session cookie; logout ends it everywhere at once. */
export async function sessionRoutes(app: FastifyInstance, ctx: V1Context & { users: UsersService }) {
  const secure = ctx.deps.config.baseUrl.startsWith('https:')
  app.post<{ Body: { email: string; password: string } }>(
    '/session',
    {
      config: { public: true, setsCookieCredential: true },
      schema: {
        tags: ['session'],
        summary: 'Log in (dashboard): sets the tollgate_session cookie',
        security: [],
        body: { type: 'object', required: ['email', 'password'], properties: { email: { type: 'string' }, password: { type: 'string' } } },
        response: { 200: ok('the session'), 401: errorResponse, 403: errorResponse, 429: errorResponse },
      },
    },
    async (request, reply) => {
      // Brute-force brake: per client address and per email, shared across processes.
      await hitRateLimit({ ...ctx.limiter, max: ctx.loginMax, windowSeconds: 60 }, 'login-ip', request.ip, reply)
      await hitRateLimit({ ...ctx.limiter, max: ctx.loginMax, windowSeconds: 60 }, 'login-email', String(request.body.email).trim().toLowerCase(), reply)
      const user = await ctx.users.authenticate(request.body.email, request.body.password)
      const session = await ctx.users.createSession(user.id)
      reply.setCookie(SESSION_COOKIE, session.token, { path: '/', httpOnly: true, sameSite: 'lax', secure, expires: session.expiresAt })
      return { object: 'session', user: { id: user.id, email: user.email }, expires_at: session.expiresAt.toISOString() }
    },
  )
  app.get('/session', { schema: { tags: ['session'], summary: 'Who is calling (API key or session)', response: { 200: ok('the caller') } } }, async (request) => {
    const p = request.principal!
    const user = await ctx.users.get(p.userId)
    return { object: 'session', user: { id: p.userId, email: user?.email ?? null }, via: p.via }
  })
  app.delete('/session', { schema: { tags: ['session'], summary: 'Log out: ends the cookie session', response: { 204: noContent } } }, async (request, reply) => {
    const token = request.cookies[SESSION_COOKIE]
    if (request.principal?.via !== 'session' || !token) throw appError('bad_request', { detail: 'no dashboard session to end; API keys are revoked with DELETE /v1/api-keys/{id}' })
    await ctx.users.endSession(token)
    reply.clearCookie(SESSION_COOKIE, { path: '/' })
    return reply.code(204).send()
  })
}

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { appError } from '../../../errors.js'
import { DEVICE_COOKIE, DEVICE_TTL_SECONDS, loginEmailId } from '../../../services/accounts/login-devices.js'
import type { UsersService } from '../../../services/accounts/users.js'
import { SESSION_COOKIE } from '../../plugins/api-key-auth.js'
import { hitRateLimit } from '../../plugins/rate-limit.js'
import type { V1Context } from './context.js'
import { errorResponse, noContent, ok } from './schemas.js'

/** The slow window of the login throttle: per (email, client) and per email. */
export const LOGIN_BACKOFF_SECONDS = 15 * 60

/**
 * The brake on password guessing, before the password is checked (docs/api.md, Login throttling),
 * with `max` the per-minute login limit (10 by default):
 * - a browser that has logged in to this email before (device cookie): `max` per 15 min for
 *   (email, that browser), and nothing else, so no stranger's failures can keep the owner out (and
 *   a stolen device cookie guesses no faster than a stranger's address);
 * - any other client: `max` a minute per address (whatever the email), `max` per 15 min per
 *   (email, address), and 3 × `max` per 15 min per email from all such clients together (429
 *   `login_throttled`), so guessing from many addresses is slowed too, and one address alone
 *   cannot raise that last brake.
 */
async function throttleLogin(
  ctx: V1Context,
  request: FastifyRequest,
  reply: FastifyReply,
  emailId: string,
  device: string | undefined,
): Promise<void> {
  const limit = (max: number, windowSeconds: number) => ({ ...ctx.limiter, max, windowSeconds })
  if (device !== undefined)
    return hitRateLimit(limit(ctx.loginMax, LOGIN_BACKOFF_SECONDS), 'login-device', `${emailId}:${device}`, reply)
  await hitRateLimit(limit(ctx.loginMax, 60), 'login-ip', request.ip, reply)
  await hitRateLimit(limit(ctx.loginMax, LOGIN_BACKOFF_SECONDS), 'login-client', `${emailId}:${request.ip}`, reply)
  await hitRateLimit(limit(3 * ctx.loginMax, LOGIN_BACKOFF_SECONDS), 'login-email', emailId, reply, (retryAfter) =>
    appError('login_throttled', { retryAfter }),
  )
}

/** Dashboard login: email + password → httpOnly session cookie; logout ends it everywhere at once. */
export async function sessionRoutes(app: FastifyInstance, ctx: V1Context & { users: UsersService }) {
  const secure = ctx.deps.config.baseUrl.startsWith('https:')
  const devices = ctx.deps.services.loginDevices
  app.post<{ Body: { email: string; password: string } }>(
    '/session',
    {
      config: { public: true, setsCookieCredential: true },
      schema: {
        tags: ['session'],
        summary: 'Log in (dashboard): sets the tollgate_session cookie',
        security: [],
        body: {
          type: 'object',
          required: ['email', 'password'],
          properties: { email: { type: 'string' }, password: { type: 'string' } },
        },
        response: { 200: ok('the session'), 401: errorResponse, 403: errorResponse, 429: errorResponse },
      },
    },
    async (request, reply) => {
      const emailId = loginEmailId(request.body.email)
      const deviceToken = request.cookies[DEVICE_COOKIE]
      await throttleLogin(ctx, request, reply, emailId, await devices.recognise(deviceToken, emailId))
      const user = await ctx.users.authenticate(request.body.email, request.body.password)
      const session = await ctx.users.createSession(user.id)
      reply.setCookie(SESSION_COOKIE, session.token, {
        path: '/',
        httpOnly: true,
        sameSite: 'lax',
        secure,
        expires: session.expiresAt,
      })
      // only the login route reads it; a new token on every login (login-devices.ts)
      reply.setCookie(DEVICE_COOKIE, await devices.remember(deviceToken, emailId), {
        path: '/v1/session',
        httpOnly: true,
        sameSite: 'strict',
        secure,
        maxAge: DEVICE_TTL_SECONDS,
      })
      return {
        object: 'session',
        user: { id: user.id, email: user.email },
        expires_at: session.expiresAt.toISOString(),
      }
    },
  )
  app.get(
    '/session',
    {
      schema: {
        tags: ['session'],
        summary: 'Who is calling (API key or session)',
        response: { 200: ok('the caller') },
      },
    },
    async (request) => {
      const p = request.principal!
      const user = await ctx.users.get(p.userId)
      return { object: 'session', user: { id: p.userId, email: user?.email ?? null }, via: p.via }
    },
  )
  app.delete(
    '/session',
    { schema: { tags: ['session'], summary: 'Log out: ends the cookie session', response: { 204: noContent } } },
    async (request, reply) => {
      const token = request.cookies[SESSION_COOKIE]
      if (request.principal?.via !== 'session' || !token)
        throw appError('bad_request', {
          detail: 'no dashboard session to end; API keys are revoked with DELETE /v1/api-keys/{id}',
        })
      await ctx.users.endSession(token)
      reply.clearCookie(SESSION_COOKIE, { path: '/' })
      return reply.code(204).send()
    },
  )
}

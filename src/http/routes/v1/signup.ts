import type { FastifyInstance } from 'fastify'
import { appError } from '../../../errors.js'
import { MIN_PASSWORD_LENGTH, type UsersService } from '../../../services/accounts/users.js'
import { SESSION_COOKIE } from '../../plugins/api-key-auth.js'
import { hitRateLimit } from '../../plugins/rate-limit.js'
import type { V1Context } from './context.js'
import { errorResponse, ok } from './schemas.js'

/** Accounts one client address may create per hour: enough for a team trying the sandbox, not for a script. */
export const SIGNUPS_PER_HOUR = 5

/**
 * Self-service sign-up (`TOLLGATE_SIGNUP=open`, the sandbox default): email and password make a
 * user, logged in at once with the dashboard cookie. Production keeps operator-only accounts
 * (`tollgate users create`) unless an operator opens it. Limited per client address, counted in
 * Redis across processes, before the body is looked at.
 */
export async function signupRoutes(app: FastifyInstance, ctx: V1Context & { users: UsersService }) {
  const { config } = ctx.deps
  const secure = config.baseUrl.startsWith('https:')
  const tags = ['session']
  app.get(
    '/signup',
    {
      config: { public: true },
      schema: {
        tags,
        summary: 'Whether anyone may create an account here (the dashboard shows its sign-up form then)',
        security: [],
        response: { 200: ok('{object: "signup", open, min_password_length, deployment: "sandbox" | "production"}') },
      },
    },
    // the deployment too: the dashboard shows a sandbox banner on every page, the login screen included
    async () => ({
      object: 'signup',
      open: config.signup,
      min_password_length: MIN_PASSWORD_LENGTH,
      deployment: config.deployment,
    }),
  )
  app.post<{ Body: { email: string; password: string } }>(
    '/signup',
    {
      config: { public: true },
      schema: {
        tags,
        summary: 'Create an account (when sign-up is open) and log in: sets the tollgate_session cookie',
        security: [],
        body: {
          type: 'object',
          required: ['email', 'password'],
          additionalProperties: false,
          properties: { email: { type: 'string', maxLength: 254 }, password: { type: 'string', maxLength: 1024 } },
        },
        response: {
          201: ok('the new user and session'),
          400: errorResponse,
          403: errorResponse,
          409: errorResponse,
          429: errorResponse,
        },
      },
    },
    async (request, reply) => {
      if (!config.signup) throw appError('signup_closed')
      await hitRateLimit({ ...ctx.limiter, max: SIGNUPS_PER_HOUR, windowSeconds: 3600 }, 'signup-ip', request.ip, reply)
      const user = await ctx.users.create(request.body.email, request.body.password)
      request.log.info({ user: user.id }, 'account created by sign-up')
      const session = await ctx.users.createSession(user.id)
      reply.setCookie(SESSION_COOKIE, session.token, {
        path: '/',
        httpOnly: true,
        sameSite: 'lax',
        secure,
        expires: session.expiresAt,
      })
      return reply.code(201).send({
        object: 'session',
        user: { id: user.id, email: user.email },
        expires_at: session.expiresAt.toISOString(),
      })
    },
  )
}

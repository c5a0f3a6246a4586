import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import '@fastify/cookie'
import fp from 'fastify-plugin'
import { appError } from '../../errors.js'
import type { ApiKeysService } from '../../services/accounts/api-keys.js'
import type { UsersService } from '../../services/accounts/users.js'

export const SESSION_COOKIE = 'tollgate_session'

/** Who is calling: a user through an API key or through a dashboard session cookie. */
export interface Principal {
  userId: string
  via: 'api_key' | 'session'
  /** API key id or session id: the unit that rate limits count */
  credentialId: string
}

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal | null
  }
  interface FastifyContextConfig {
    /** routes that work without credentials (login) */
    public?: boolean
  }
}

export interface ApiKeyAuthOptions {
  apiKeys: ApiKeysService
  users: UsersService
}

/**
 * Authenticates every route of the context it is registered in (skip with `config.public`).
 * `Authorization: Bearer sk_…` wins; otherwise the dashboard session cookie; otherwise 401
 * `missing_api_key` with `WWW-Authenticate: Bearer`. Every request looks its credential up by hash
 * (an indexed read), so a revoke or logout is effective on every process at once.
 */
export const apiKeyAuth = fp<ApiKeyAuthOptions>(
  async (app: FastifyInstance, opts) => {
    app.decorateRequest('principal', null)
    app.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
      if (request.routeOptions.config?.public) return
      const header = request.headers.authorization
      if (header !== undefined) {
        const m = /^Bearer[ ]+(\S+)\s*$/i.exec(header)
        if (!m)
          throw appError('invalid_api_key', {}, { headers: { 'www-authenticate': 'Bearer error="invalid_token"' } })
        const p = await opts.apiKeys.authenticate(m[1]!).catch((err) => {
          throw Object.assign(err, { headers: { 'www-authenticate': 'Bearer error="invalid_token"' } })
        })
        request.principal = { userId: p.userId, via: 'api_key', credentialId: p.keyId }
        return
      }
      const token = request.cookies?.[SESSION_COOKIE]
      if (token) {
        const s = await opts.users.sessionUser(token)
        if (s) {
          request.principal = { userId: s.user.id, via: 'session', credentialId: s.sessionId }
          return
        }
        reply.clearCookie(SESSION_COOKIE, { path: '/' })
      }
      throw appError('missing_api_key', {}, { headers: { 'www-authenticate': 'Bearer' } })
    })
  },
  { name: 'tollgate-api-key-auth', dependencies: ['@fastify/cookie'] },
)

import { createHmac, timingSafeEqual } from 'node:crypto'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { appError } from '../../../errors.js'
import { sendAppError } from '../../../error-render.js'

export const OPS_COOKIE = 'tollgate_ops'

const mac = (token: string, what: string) => createHmac('sha256', token).update(what).digest()
const same = (a: Buffer, b: Buffer) => a.length === b.length && timingSafeEqual(a, b)

function cookie(request: FastifyRequest, name: string): string | undefined {
  const header = request.headers.cookie
  if (!header) return undefined
  for (const part of header.split(';')) {
    const i = part.indexOf('=')
    if (i > 0 && part.slice(0, i).trim() === name) return part.slice(i + 1).trim()
  }
  return undefined
}

/**
 * onRequest hook for the operator pages under `basePath`: `Authorization: Bearer <token>`
 * (preferred), or `?token=<token>` once, which sets an HttpOnly, SameSite=Strict session cookie
 * scoped to `basePath` so the board's own asset and API requests (which carry no header) pass.
 * The cookie is an HMAC of the token: rotating the token ends every session. No token configured:
 * 401 `operator_only` to everyone.
 */
export function opsAuth(token: string | undefined, basePath: string, secure: boolean) {
  const expected = token ? mac(token, 'token') : undefined
  const session = token ? mac(token, 'ops-session').toString('base64url') : undefined
  // answered here, not thrown: the board's plugin has an error handler of its own
  const deny = (reply: FastifyReply) => sendAppError(reply, appError('operator_only'))
  return async function (request: FastifyRequest, reply: FastifyReply): Promise<void> {
    if (!expected || !session) return deny(reply)
    const header = request.headers.authorization
    const bearer = typeof header === 'string' && header.startsWith('Bearer ') ? header.slice(7).trim() : undefined
    if (bearer !== undefined && same(mac(bearer, 'token'), expected)) return
    const fromCookie = cookie(request, OPS_COOKIE)
    if (fromCookie !== undefined && same(Buffer.from(fromCookie), Buffer.from(session))) return
    const query = (request.query as Record<string, unknown> | undefined)?.token
    if (typeof query === 'string' && same(mac(query, 'token'), expected)) {
      const attrs = [
        `${OPS_COOKIE}=${session}`,
        `Path=${basePath}`,
        'HttpOnly',
        'SameSite=Strict',
        'Max-Age=43200',
        ...(secure ? ['Secure'] : []),
      ]
      void reply.header('set-cookie', attrs.join('; '))
      return
    }
    return deny(reply)
  }
}

import { createHash, timingSafeEqual } from 'node:crypto'
import type { FastifyRequest } from 'fastify'
import { appError } from '../../../errors.js'

const digest = (s: string) => createHash('sha256').update(s).digest()

/**
 * preHandler for operator routes: `Authorization: Bearer <TOLLGATE_OPERATOR_TOKEN>`, compared in
 * constant time. Without a configured token the operator routes answer 401 to everyone.
 */
export function operatorAuth(token: string | undefined) {
  const expected = token ? digest(token) : undefined
  return async function (request: FastifyRequest): Promise<void> {
    const header = request.headers.authorization
    const given = typeof header === 'string' && header.startsWith('Bearer ') ? header.slice(7).trim() : undefined
    // hashing first gives equal lengths, so timingSafeEqual never throws and leaks no length
    if (!expected || !given || !timingSafeEqual(digest(given), expected)) throw appError('operator_only')
  }
}

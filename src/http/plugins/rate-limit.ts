import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { RedisClient } from '../../redis-client.js'
import { AppError, appError } from '../../errors.js'
import { createFixedWindowLimiter } from '../../limits/fixed-window.js'

export interface RateLimitOptions {
  redis: RedisClient
  /** builds the Redis key (already prefixed with the deployment) */
  key: (...parts: string[]) => string
  /** requests per window per credential */
  max: number
  windowSeconds: number
  /** what a request is counted under; undefined = not limited */
  identify: (request: FastifyRequest) => string | undefined
  /** distinguishes several limiters in one app */
  name?: string
}

/**
 * Fixed-window limit per credential, counted in Redis so every process shares it. Sends the IETF
 * draft headers `RateLimit-Limit`, `RateLimit-Remaining`, `RateLimit-Reset` (seconds) and
 * `RateLimit-Policy`, and 429 `rate_limited` with `Retry-After` past the limit.
 *
 * Runs as a preParsing hook: after authentication (onRequest) has named the credential, before the
 * body is read and the schema checked. So every answer to an authenticated request is counted and
 * labelled, a 400 for a malformed body or a bad parameter too (were they free, a client could send
 * them without bound). Answers to requests without a credential (401) are neither: there is
 * nothing to count them under.
 */
export const rateLimit = fp<RateLimitOptions>(
  async (app: FastifyInstance, opts) => {
    const name = opts.name ?? 'v1'
    app.addHook('preParsing', async (request, reply, payload) => {
      const id = opts.identify(request)
      if (id !== undefined) await hitRateLimit(opts, name, id, reply)
      return payload
    })
  },
  { name: 'tollgate-rate-limit' },
)

/**
 * Counts one request of `id` against the limit; sets the headers; past the limit throws 429
 * `rate_limited`, or the error `refuse` makes of the seconds left (it should be a 429 too).
 */
export async function hitRateLimit(
  opts: Pick<RateLimitOptions, 'redis' | 'key' | 'max' | 'windowSeconds'>,
  name: string,
  id: string,
  reply: FastifyReply,
  refuse: (retryAfter: number) => AppError = (retryAfter) => appError('rate_limited', { retryAfter }),
): Promise<void> {
  let hit
  try {
    hit = await createFixedWindowLimiter(opts.redis, opts.key).hit(name, id, {
      max: opts.max,
      windowSeconds: opts.windowSeconds,
    })
  } catch {
    // Redis down: serve rather than fail closed; the API itself needs Postgres, not Redis.
    return
  }
  reply.header('ratelimit-limit', opts.max)
  reply.header('ratelimit-remaining', Math.max(0, opts.max - hit.count))
  reply.header('ratelimit-reset', hit.resetSeconds)
  reply.header('ratelimit-policy', `${opts.max};w=${opts.windowSeconds}`)
  if (hit.limited) {
    const e = refuse(hit.resetSeconds)
    throw new AppError(e.code, e.statusCode, e.message, e.details, {
      ...e.headers,
      'retry-after': String(hit.resetSeconds),
    })
  }
}

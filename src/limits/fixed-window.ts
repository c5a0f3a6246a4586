import type { RedisClient } from '../redis-client.js'

// INCR and set the expiry on the first hit, atomically; returns the count and the ms left in the window.
const HIT = `
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]); ttl = tonumber(ARGV[1]) end
return {n, ttl}`

export interface WindowHit {
  /** requests counted in this window, this one included */
  count: number
  /** seconds until the window ends (at least 1) */
  resetSeconds: number
  /** past the limit */
  limited: boolean
}

type RedisWithHit = RedisClient & { tollgateWindowHit?: (key: string, windowMs: string) => Promise<[number, number]> }

/**
 * The one fixed-window limiter: a count per (name, id) in Redis, shared by every process, in one
 * round trip. The window starts at its first request. Rejects when Redis fails; each caller
 * decides whether that fails open (the user API) or closed (paid calls).
 *
 * @example
 *   const limiter = createFixedWindowLimiter(deps.redis, deps.key)
 *   const hit = await limiter.hit('login-ip', request.ip, { max: 10, windowSeconds: 60 })
 *   if (hit.limited) throw appError('rate_limited', { retryAfter: hit.resetSeconds })
 */
export function createFixedWindowLimiter(redis: RedisClient, key: (...parts: string[]) => string) {
  const r = redis as RedisWithHit
  if (!r.tollgateWindowHit) r.defineCommand('tollgateWindowHit', { numberOfKeys: 1, lua: HIT })
  return {
    async hit(name: string, id: string, limit: { max: number; windowSeconds: number }): Promise<WindowHit> {
      const [count, ttlMs] = await r.tollgateWindowHit!(key('ratelimit', name, id), String(limit.windowSeconds * 1000))
      return { count, resetSeconds: Math.max(1, Math.ceil(ttlMs / 1000)), limited: count > limit.max }
    },
  }
}

export type FixedWindowLimiter = ReturnType<typeof createFixedWindowLimiter>

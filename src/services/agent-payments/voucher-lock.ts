/**
 * One `deferred` payment at a time per agent wallet and seller, across every web process: the next
 * voucher is planned on the voucher head, signed, recorded and the vouchers it supersedes released
 * under this lock, so concurrent calls neither each build on the same head and all stay counted,
 * nor release one another's voucher while it is being signed (issue #33). Waits up to `waitMs` for
 * the holder (TTL `ttlMs`: a process killed while holding it blocks the pair that long).
 *
 * @example
 *   await voucherLock.hold(payer, seller, () => signAndRecord())
 */
import { randomBytes } from 'node:crypto'
import { appError } from '../../errors.js'
import { redisTag, type RedisClient } from '../../redis-client.js'

const RELEASE_LUA = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end`

export function createVoucherLock(
  redis: RedisClient,
  key: (...p: string[]) => string,
  o: { ttlMs?: number; waitMs?: number } = {},
) {
  const ttlMs = o.ttlMs ?? 15_000
  const waitMs = o.waitMs ?? 15_000
  return {
    async hold<T>(payer: string, seller: string, fn: () => Promise<T>): Promise<T> {
      const k = key('agent-voucher-lock', redisTag(payer.toLowerCase()), seller.toLowerCase())
      const token = randomBytes(12).toString('hex')
      const until = Date.now() + waitMs
      let delay = 5
      while ((await redis.set(k, token, 'PX', ttlMs, 'NX')) !== 'OK') {
        if (Date.now() > until)
          throw appError(
            'service_unavailable',
            { detail: 'another payment of this agent to the same seller is being signed; retry shortly' },
            { headers: { 'retry-after': '1' } },
          )
        await new Promise((r) => setTimeout(r, delay))
        delay = Math.min(delay * 2, 100)
      }
      try {
        return await fn()
      } finally {
        await redis.eval(RELEASE_LUA, 1, k, token).catch(() => {})
      }
    },
  }
}

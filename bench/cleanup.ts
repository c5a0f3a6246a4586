import type { Redis } from 'ioredis'

/**
 * Deletes a bench run's Redis keys (everything under its own prefix), as its schema is dropped:
 * nonce guards, spend counters and unsettled sets would otherwise stay behind (tens of MB a run).
 *
 * @example
 *   await dropRedisPrefix(deps.redis, config.redisPrefix)
 */
export async function dropRedisPrefix(redis: Redis, prefix: string): Promise<void> {
  for await (const keys of redis.scanStream({ match: `${prefix}:*`, count: 1000 })) {
    if ((keys as string[]).length) await redis.unlink(...(keys as string[]))
  }
}

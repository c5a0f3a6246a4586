import { keyServers, type RedisClient } from '../src/redis-client.js'

/**
 * Deletes a bench run's Redis keys (everything under its own prefix), as its schema is dropped:
 * nonce guards, spend counters and unsettled sets would otherwise stay behind (tens of MB a run).
 *
 * @example
 *   await dropRedisPrefix(deps.redis, config.redisPrefix)
 */
export async function dropRedisPrefix(redis: RedisClient, prefix: string): Promise<void> {
  // the deployment's keys, and its BullMQ queues (prefix `{<prefix>}`); per server on a cluster
  for (const server of keyServers(redis))
    for (const match of [`${prefix}:*`, `{${prefix}}:*`])
      for await (const keys of server.scanStream({ match, count: 1000 })) {
        // one UNLINK a key, pipelined: on a cluster, the keys of one command must share a slot
        if ((keys as string[]).length) await server.pipeline((keys as string[]).map((k) => ['unlink', k])).exec()
      }
}

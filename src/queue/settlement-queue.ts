import { Queue, type ConnectionOptions } from 'bullmq'
import type { Config } from '../config.js'
import { bullPrefix, createRedisClient, type RedisClient } from '../redis-client.js'

export const SETTLEMENT_QUEUE = 'settlement'

/** A BullMQ connection of its own (BullMQ needs maxRetriesPerRequest: null for blocking calls). */
export function bullConnection(config: Pick<Config, 'redisUrl'>): RedisClient {
  const r = createRedisClient(config.redisUrl, { maxRetriesPerRequest: null, enableReadyCheck: false })
  r.on('error', () => {})
  return r
}

/**
 * BullMQ's prefix for this deployment: the Redis prefix in a hash tag (`{tollgate:sandbox}`), so
 * every key of a queue lands in one cluster slot, as BullMQ's Lua scripts need on a Redis Cluster.
 */
export function queuePrefix(config: Pick<Config, 'redisPrefix'>): string {
  return bullPrefix(config.redisPrefix)
}

/** The `settlement` queue under this deployment's Redis prefix. */
export function settlementQueue(
  config: Pick<Config, 'redisUrl' | 'redisPrefix'>,
  connection: ConnectionOptions = bullConnection(config),
): Queue {
  return new Queue(SETTLEMENT_QUEUE, { connection, prefix: queuePrefix(config) })
}

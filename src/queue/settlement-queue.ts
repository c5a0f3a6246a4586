import { Queue, type ConnectionOptions } from 'bullmq'
import { Redis } from 'ioredis'
import type { Config } from '../config.js'

export const SETTLEMENT_QUEUE = 'settlement'

/** A BullMQ connection of its own (BullMQ needs maxRetriesPerRequest: null for blocking calls). */
export function bullConnection(config: Pick<Config, 'redisUrl'>): Redis {
  const r = new Redis(config.redisUrl, { maxRetriesPerRequest: null, enableReadyCheck: false })
  r.on('error', () => {})
  return r
}

/** The `settlement` queue under this deployment's Redis prefix. */
export function settlementQueue(
  config: Pick<Config, 'redisUrl' | 'redisPrefix'>,
  connection: ConnectionOptions = bullConnection(config),
): Queue {
  return new Queue(SETTLEMENT_QUEUE, { connection, prefix: config.redisPrefix })
}

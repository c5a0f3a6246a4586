import { Redis } from 'ioredis'
import type { Kysely } from 'kysely'
import { createPublicClient, http, type PublicClient } from 'viem'
import type { Config } from './config.js'
import { createDb } from './db/create-db.js'
import type { Database } from './db/database.js'

/** Everything a process role needs, built once from the config. The one wiring place. */
export interface Deps {
  config: Readonly<Config>
  db: Kysely<Database>
  redis: Redis
  chain: PublicClient
  /** prefixes a Redis key with this deployment's prefix */
  key(...parts: string[]): string
  close(): Promise<void>
}

/** `Deps.key` for a deployment's Redis prefix */
export function redisKeys(prefix: string): Deps['key'] {
  return (...parts) => [prefix, ...parts].join(':')
}

export function createDeps(config: Readonly<Config>): Deps {
  if (!config.rpcUrl) throw new Error('createDeps needs config.rpcUrl (the dev entry starts the embedded chain first)')
  const db = createDb({ databaseUrl: config.databaseUrl, schema: config.databaseSchema })
  const redis = new Redis(config.redisUrl, {
    lazyConnect: false,
    maxRetriesPerRequest: 2,
    // keep trying to reconnect forever, but fail commands quickly while down
    enableOfflineQueue: true,
    retryStrategy: (times) => Math.min(times * 200, 2000),
  })
  // connection errors surface through commands and /readyz; the emitter must not crash the process
  redis.on('error', () => {})
  const chain = createPublicClient({ transport: http(config.rpcUrl, { timeout: 10_000, retryCount: 1 }) }) as PublicClient
  let closed = false
  return {
    config,
    db,
    redis,
    chain,
    key: redisKeys(config.redisPrefix),
    async close() {
      if (closed) return
      closed = true
      await Promise.allSettled([db.destroy(), redis.quit().catch(() => redis.disconnect())])
    },
  }
}

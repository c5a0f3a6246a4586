/**
 * The config and the clients a process role runs on, without the domain services built on them:
 * what the services and the proxy take (src/deps.ts adds the services and builds it all), so they
 * sit below the wiring that builds them and no import runs back up to it.
 */
import type { Kysely } from 'kysely'
import type { PublicClient } from 'viem'
import type { Config } from './config.js'
import type { Database } from './db/database.js'
import type { RedisClient } from './redis-client.js'

export interface CoreDeps {
  config: Readonly<Config>
  db: Kysely<Database>
  /**
   * read-only queries that may lag (history, exports, the marketplace): a pool on DATABASE_READ_URL
   * (a read replica) when it is set, else `db` itself; absent in hand-built deps, which means `db`
   */
  readDb?: Kysely<Database>
  /** one Redis or a Redis Cluster (REDIS_URL decides, src/redis-client.ts) */
  redis: RedisClient
  chain: PublicClient
  /** prefixes a Redis key with this deployment's prefix */
  key(...parts: string[]): string
}

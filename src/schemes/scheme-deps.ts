/**
 * What schemes may take from the process's wiring (src/deps.ts builds it): the config and the
 * clients, never the domain services. Each scheme names the parts it uses (`Pick<SchemeDeps, ...>`),
 * so its constructor says what it touches and a test can build it from those alone.
 */
import type { Kysely } from 'kysely'
import type { PublicClient } from 'viem'
import type { Config } from '../config.js'
import type { Database } from '../db/database.js'
import type { RedisClient } from '../redis-client.js'

export interface SchemeDeps {
  config: Readonly<Config>
  db: Kysely<Database>
  /** one Redis or a Redis Cluster */
  redis: RedisClient
  chain: PublicClient
  /** prefixes a Redis key with this deployment's prefix */
  key(...parts: string[]): string
}

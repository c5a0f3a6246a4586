import { Kysely, PostgresDialect } from 'kysely'
import pg from 'pg'
import type { Database } from './database.js'

// int8 (bigint, count(*)) as string, not a lossy JS number
pg.types.setTypeParser(20, (v) => v)

export interface DbOptions {
  databaseUrl: string
  /** search_path for every connection; tests use one schema per run */
  schema: string
  max?: number
}

/** A Kysely instance on a pg pool whose connections all use `schema`. */
export function createDb(opts: DbOptions): Kysely<Database> {
  const pool = new pg.Pool({
    connectionString: opts.databaseUrl,
    max: opts.max ?? 10,
    options: `-c search_path=${opts.schema}`,
    connectionTimeoutMillis: 5000,
    // a dead server must fail the query, not hang it
    query_timeout: 30000,
  })
  // An idle client that loses its server emits 'error'; without a listener that kills the process.
  pool.on('error', () => {})
  return new Kysely<Database>({ dialect: new PostgresDialect({ pool }) })
}

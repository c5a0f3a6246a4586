import { CompiledQuery, Kysely, PostgresDialect } from 'kysely'
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
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) })
  pools.set(db, pool)
  return db
}

const pools = new WeakMap<Kysely<Database>, pg.Pool>()

/**
 * Runs one fixed statement as a named prepared statement: each connection parses and plans it
 * once, not on every call. For the hot group-commit writers, where planning a CTE over column
 * arrays cost about 40% of a one-row round trip (bench/README.md). `name` must be unique
 * per `text`. A Kysely instance not made by createDb runs it unnamed.
 *
 * @example
 *   const { rows } = await preparedQuery<{ id: string }>(db, 'tollgate_ledger_v1', 'select $1::int as id', [1])
 */
export async function preparedQuery<R>(
  db: Kysely<Database>,
  name: string,
  text: string,
  values: unknown[],
): Promise<{ rows: R[] }> {
  const pool = pools.get(db)
  if (pool) return pool.query<R & pg.QueryResultRow>({ name, text, values })
  return db.executeQuery<R>(CompiledQuery.raw(text, values))
}

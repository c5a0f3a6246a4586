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

/**
 * A Kysely instance on a pg pool whose connections all use `schema`, and beside it a small pool
 * for the named statements of the group-commit writers (`preparedQuery`), opened on first use and
 * closed with the instance.
 */
export function createDb(opts: DbOptions): Kysely<Database> {
  const pool = poolOf(opts, opts.max ?? 10, '')
  let writers: pg.Pool | undefined
  const both = {
    connect: () => pool.connect(),
    end: async () => {
      await Promise.all([pool.end(), writers?.end()])
    },
  }
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: both }) })
  // its connections plan every named statement generically (see preparedQuery)
  pools.set(db, () => (writers ??= poolOf(opts, WRITER_CONNECTIONS, ' -c plan_cache_mode=force_generic_plan')))
  return db
}

/** The writers' pool: enough for every group-commit writer of a process to flush at once. */
const WRITER_CONNECTIONS = 8

function poolOf(opts: DbOptions, max: number, moreOptions: string): pg.Pool {
  const pool = new pg.Pool({
    connectionString: opts.databaseUrl,
    max,
    options: `-c search_path=${opts.schema}${moreOptions}`,
    connectionTimeoutMillis: 5000,
    // a dead server must fail the query, not hang it
    query_timeout: 30000,
  })
  // An idle client that loses its server emits 'error'; without a listener that kills the process.
  pool.on('error', () => {})
  return pool
}

const pools = new WeakMap<Kysely<Database>, () => pg.Pool>()

/**
 * Runs one fixed statement as a named prepared statement: each connection parses and plans it
 * once, not on every call. For the hot group-commit writers, where planning a CTE over column
 * arrays cost about 40% of a one-row round trip (bench/HISTORY.md). `name` must be unique
 * per `text`. A Kysely instance not made by createDb runs it unnamed.
 *
 * They run on the writers' pool, whose connections set `plan_cache_mode=force_generic_plan`:
 * left to choose, Postgres kept planning the ledger's statement afresh for every batch (a batch's
 * many empty arrays make a custom plan look cheaper than the generic one), about 2 ms of Postgres
 * CPU a statement (bench/README.md, "Batch-settlement vs exact"). Kysely's own queries keep
 * Postgres's choice on the other pool.
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
  const pool = pools.get(db)?.()
  if (pool) return pool.query<R & pg.QueryResultRow>({ name, text, values })
  return db.executeQuery<R>(CompiledQuery.raw(text, values))
}

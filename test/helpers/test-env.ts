import { randomBytes } from 'node:crypto'
import { sql } from 'kysely'
import { loadConfig, type Config } from '../../src/config.js'
import { createDb } from '../../src/db/create-db.js'
import { migrateToLatest } from '../../src/db/migrate.js'
import { createDeps, type Deps } from '../../src/deps.js'
import { transitionGuardSql } from '../../src/ledger/statuses.js'
import { createRedisClient, keyServers, whenReady } from '../../src/redis-client.js'
import { recordSetup, timedSetup } from './setup-timing.js'

// the process's start until here: node, the TypeScript loader and the platform's modules (deps.ts)
recordSetup('load', performance.now())

/** The database tests use; each test run gets its own schema inside it. */
export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
export const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379'

interface Teardown {
  teardown(fn: () => unknown): void
}

export function uniqueName(prefix: string): string {
  return `${prefix}_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`
}

/**
 * Kysely's migrator looks for its tables with an introspection query over every schema of the
 * database (`has_schema_privilege(nspname, 'USAGE')` per row). Test runs drop their schemas at
 * teardown while other runs migrate, and a schema dropped during that query fails it with
 * `schema "<the other run's>" does not exist` (or `relation "<other>.<table>" does not exist` when
 * one of its tables goes, a dropped partition; or `column "<c>" of relation "<table>" does not exist`, unqualified,
 * from the introspection itself). Only those errors, naming another schema, are tried again.
 */
async function migrateWhileOthersDrop(db: Parameters<typeof migrateToLatest>[0], schema: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await migrateToLatest(db, schema)
      return
    } catch (err) {
      // another run's schema dropped, or a table of it (a partition detached and dropped) gone mid-query
      const m = /(?:schema "([^"]+)"|relation "([^".]+)\.[^"]+") does not exist/.exec((err as Error).message)
      const gone = m?.[1] ?? m?.[2]
      // or one of its tables' columns, read by the introspection (not by a migration: no name), unqualified
      const column = /^migration \(unknown\) failed: column "[^"]+" of relation "[^"]+" does not exist/.test(
        (err as Error).message,
      )
      if (column && attempt < 5) continue
      if (!gone || gone === schema || attempt >= 5) throw err
    }
  }
}

/**
 * Kysely's migrator introspects every schema of the database first; other test runs drop their
 * schemas (and archive tests their partitions) meanwhile, which fails that read with "... does not
 * exist" naming something of theirs. Such a run changed nothing here, so it is tried again.
 */
export async function despiteOtherRuns<R extends { error?: unknown }>(
  schema: string,
  run: () => Promise<R>,
): Promise<R> {
  for (let attempt = 1; ; attempt++) {
    let r: R
    try {
      r = await run()
    } catch (err) {
      r = { error: err } as R
    }
    const message = r.error instanceof Error ? r.error.message : ''
    if (!r.error || attempt >= 5 || !/does not exist/.test(message) || message.includes(schema)) {
      if (r.error && !('results' in r)) throw r.error
      return r
    }
  }
}

/** A fresh Postgres schema, migrated to latest, dropped at teardown. */
export async function testSchema(t: Teardown, opts: { migrate?: boolean } = {}): Promise<string> {
  const schema = uniqueName('t')
  const db = createDb({ databaseUrl: TEST_DATABASE_URL, schema, max: 1 })
  try {
    if (opts.migrate !== false)
      await timedSetup('schema', async () => {
        await migrateWhileOthersDrop(db, schema)
        // every test that moves a payment is checked against the ledger's transition table
        for (const statement of transitionGuardSql()) await sql.raw(statement).execute(db)
      })
    else await sql`create schema ${sql.id(schema)}`.execute(db)
  } finally {
    await db.destroy()
  }
  t.teardown(async () => {
    const admin = createDb({ databaseUrl: TEST_DATABASE_URL, schema: 'public', max: 1 })
    await sql`drop schema if exists ${sql.id(schema)} cascade`.execute(admin).catch(() => {})
    await admin.destroy()
  })
  return schema
}

/** Deletes every Redis key under `prefix` (and its BullMQ queues, `{prefix}`), on every master of a cluster. */
export async function clearRedisPrefix(prefix: string, url = TEST_REDIS_URL): Promise<void> {
  const r = createRedisClient(url, { maxRetriesPerRequest: 1 })
  r.on('error', () => {})
  try {
    await whenReady(r)
    for (const server of keyServers(r))
      for (const match of [`${prefix}*`, `{${prefix}}*`]) {
        let cursor = '0'
        do {
          const [next, keys] = await server.scan(cursor, 'MATCH', match, 'COUNT', 1000)
          cursor = next
          // one DEL a key: on a cluster the keys of one command must share a slot
          if (keys.length) await server.pipeline(keys.map((k) => ['del', k])).exec()
        } while (cursor !== '0')
      }
  } finally {
    r.disconnect()
  }
}

/**
 * A config for one test: its own schema and Redis prefix, the given chain, quiet logs.
 * `env` overrides any variable.
 */
export async function testConfig(t: Teardown, env: Record<string, string | undefined> = {}): Promise<Readonly<Config>> {
  const schema = env.DATABASE_SCHEMA ?? (await testSchema(t))
  const prefix = uniqueName('tgtest')
  t.teardown(() => clearRedisPrefix(prefix))
  return loadConfig({
    DATABASE_URL: TEST_DATABASE_URL,
    REDIS_URL: TEST_REDIS_URL,
    DATABASE_SCHEMA: schema,
    REDIS_PREFIX: prefix,
    LOG_LEVEL: 'silent',
    RPC_URL: 'http://127.0.0.1:1',
    ...env,
  })
}

/** Deps on an isolated schema and prefix; closed at teardown. */
export async function testDeps(t: Teardown, env: Record<string, string | undefined> = {}): Promise<Deps> {
  const deps = createDeps(await testConfig(t, env))
  t.teardown(() => deps.close())
  return deps
}

import type { EnvReader } from './env-reader.js'
import type { Config } from './types.js'

/** DATABASE_SCHEMA: the Postgres schema (search_path), a lower-case SQL identifier. */
export function readDatabaseSchema(r: EnvReader): string {
  const schema = r.str('DATABASE_SCHEMA', 'public')
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(schema))
    r.problems.push(`DATABASE_SCHEMA: expected a lower-case SQL identifier, got "${schema}"`)
  return schema
}

type DatabaseConfig = Pick<Config, 'databaseUrl' | 'databaseSchema' | 'databaseReadUrl' | 'ledger'>

/** Postgres: the primary, the schema, the read replica, and the ledger's day partitions. */
export function databaseConfig(r: EnvReader, databaseSchema: string): DatabaseConfig {
  return {
    // `postgres://user@/db?host=/socket` (credentials, no host) is not a URL; the host-less form is
    databaseUrl: r.url(
      'DATABASE_URL',
      'postgres://postgres@127.0.0.1:5432/tollgate',
      ['postgres:', 'postgresql:'],
      ' (for a Unix socket write postgres:///<database>?host=<socket dir>&user=<user>)',
    )!,
    databaseSchema,
    databaseReadUrl: r.url('DATABASE_READ_URL', undefined, ['postgres:', 'postgresql:']),
    ledger: {
      partitionsAheadDays: r.int('LEDGER_PARTITIONS_AHEAD_DAYS', 7, 1, 90),
      retentionDays:
        r.optional('LEDGER_RETENTION_DAYS') === undefined ? undefined : r.int('LEDGER_RETENTION_DAYS', 0, 2, 36500),
    },
  }
}

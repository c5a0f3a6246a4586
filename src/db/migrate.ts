import { promises as fs } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { FileMigrationProvider, Migrator, sql, type Kysely, type MigrationResultSet } from 'kysely'

/** migrations/ beside src/ (or dist/migrations when compiled). */
export const migrationsFolder = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../migrations')

/**
 * A migrator for one schema. Kysely's Postgres adapter holds an advisory lock inside a
 * transaction while it migrates, so two processes running it at once are safe.
 */
export function createMigrator(db: Kysely<any>, schema: string): Migrator {
  return new Migrator({
    db,
    provider: new FileMigrationProvider({ fs, path, migrationFolder: migrationsFolder }),
    migrationTableSchema: schema,
  })
}

export async function ensureSchema(db: Kysely<any>, schema: string): Promise<void> {
  // Concurrent "create schema if not exists" can still race on the catalog; a second try settles it.
  for (let attempt = 0; ; attempt++) {
    try {
      await sql`create schema if not exists ${sql.id(schema)}`.execute(db)
      return
    } catch (err) {
      if (attempt >= 2) throw err
    }
  }
}

/** Migrate to latest; throws with the failing migration's name. */
export async function migrateToLatest(db: Kysely<any>, schema: string): Promise<MigrationResultSet> {
  await ensureSchema(db, schema)
  const result = await createMigrator(db, schema).migrateToLatest()
  if (result.error) {
    const failed = result.results?.find((r) => r.status === 'Error')
    throw new Error(
      `migration ${failed?.migrationName ?? '(unknown)'} failed: ${(result.error as Error).message ?? result.error}`,
    )
  }
  return result
}

import './node-version.js' // first: refuses a Node release the dependencies cannot load on
import { createDb } from '../db/create-db.js'
import { createMigrator, migrateToLatest } from '../db/migrate.js'
import { loadConfigOrExit } from './load-config.js'

// `npm run migrate` (Procfile release): to latest; `npm run migrate -- down` undoes the last one.
const config = loadConfigOrExit()
const db = createDb({ databaseUrl: config.databaseUrl, schema: config.databaseSchema, max: 1 })
try {
  if (process.argv[2] === 'down') {
    const { error, results } = await createMigrator(db, config.databaseSchema).migrateDown()
    for (const r of results ?? []) console.log(`${r.status === 'Success' ? 'reverted' : r.status}: ${r.migrationName}`)
    if (error) throw error
  } else {
    const { results } = await migrateToLatest(db, config.databaseSchema)
    for (const r of results ?? []) console.log(`applied: ${r.migrationName}`)
    if (!results?.length) console.log('database is up to date')
  }
} catch (err) {
  console.error(`migrate: ${(err as Error).message}`)
  process.exitCode = 1
} finally {
  await db.destroy()
}

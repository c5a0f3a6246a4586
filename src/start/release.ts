import './node-version.js' // first: refuses a Node release the dependencies cannot load on
import { createDb } from '../db/create-db.js'
import { migrateToLatest } from '../db/migrate.js'
import { redisKeys } from '../deps.js'
import { loadHandlerRegistry } from '../pool/handler-registry.js'
import { createRedisClient } from '../redis-client.js'
import { describeWaiting, HOSTED_NAMESPACE, seedHostedServices } from '../services/hosted-seed.js'
import { loadConfigOrExit } from './load-config.js'

// The Procfile `release` step, run once per deploy before the new processes start: migrations to
// latest, then the platform's hosted services published (idempotent) from the handlers in this
// build, as `npm start` does in development. Needs no chain; the receiver comes from
// TOLLGATE_RECEIVER_ADDRESS (required in production; without it, on sandbox, nothing is published).
const config = loadConfigOrExit()
const db = createDb({ databaseUrl: config.databaseUrl, schema: config.databaseSchema, max: 2 })
const redis = createRedisClient(config.redisUrl, { maxRetriesPerRequest: 2, lazyConnect: true })
try {
  const { results } = await migrateToLatest(db, config.databaseSchema)
  for (const r of results ?? []) console.log(`applied: ${r.migrationName}`)
  if (!results?.length) console.log('database is up to date')
  if (config.receiverAddress) {
    await redis.connect()
    const { published, waiting } = await seedHostedServices(
      { config, db, redis, key: redisKeys(config.redisPrefix) },
      await loadHandlerRegistry(),
    )
    console.log(`hosted endpoints: ${published} published under ${config.proxyUrl}/${HOSTED_NAMESPACE}/`)
    if (waiting.length)
      console.log(
        `hosted endpoints: ${waiting.length} of them answer paid calls 503 upstream_not_configured (nothing charged) until their provider settings are set (docs/hosted-services.md): ${describeWaiting(waiting)}`,
      )
  } else {
    console.log('hosted endpoints: not published (TOLLGATE_RECEIVER_ADDRESS is not set)')
  }
} catch (err) {
  console.error(`release: ${(err as Error).message}`)
  process.exitCode = 1
} finally {
  redis.disconnect()
  await db.destroy()
}

import { execFile } from 'node:child_process'
import { Redis } from 'ioredis'
import { sql } from 'kysely'
import t from 'tap'
import { createDb } from '../../../src/db/create-db.js'
import { redisKeys } from '../../../src/deps.js'
import { loadConfig } from '../../../src/config.js'
import { missingSettings } from '../../../src/pool/handler-contract.js'
import { listHandlerSlugs, loadHandlerRegistry } from '../../../src/pool/handler-registry.js'
import { registryChannel } from '../../../src/services/registry-events.js'
import { TEST_DATABASE_URL, TEST_REDIS_URL, clearRedisPrefix, testSchema, uniqueName } from '../../helpers/test-env.js'

// The Procfile `release` step (src/start/release.ts): migrations, then the hosted services
// published, with no chain and no `npm start`.
function release(env: Record<string, string>): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', 'src/start/release.ts'],
      { env: { ...process.env, RPC_URL: '', LOG_LEVEL: 'warn', ...env }, timeout: 120_000 },
      (err, stdout, stderr) =>
        resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, out: stdout + stderr }),
    )
  })
}

t.test('release migrates a fresh database and publishes the hosted services, idempotently', async (t) => {
  const schema = await testSchema(t, { migrate: false })
  const prefix = uniqueName('tgrelease')
  t.teardown(() => clearRedisPrefix(prefix))
  const receiver = `0x${'ab'.repeat(20)}`
  const env = {
    DATABASE_URL: TEST_DATABASE_URL,
    DATABASE_SCHEMA: schema,
    REDIS_URL: TEST_REDIS_URL,
    REDIS_PREFIX: prefix,
    TOLLGATE_RECEIVER_ADDRESS: receiver,
  }
  const db = createDb({ databaseUrl: TEST_DATABASE_URL, schema, max: 1 })
  t.teardown(() => db.destroy())

  // running proxies learn of the new endpoints through the registry channel
  const sub = new Redis(TEST_REDIS_URL)
  t.teardown(() => sub.disconnect())
  const announced: string[] = []
  sub.on('message', (_c, m) => announced.push(m))
  await sub.subscribe(registryChannel({ key: redisKeys(prefix) }))

  const first = await release(env)
  t.equal(first.code, 0, first.out)
  t.match(first.out, /applied: /, 'prints the migrations it applied')
  const slugs = listHandlerSlugs()
  // handlers whose provider settings this environment lacks are published too (their paid calls get 503)
  const providers = loadConfig({ ...env, RPC_URL: '' }).handlerProviders
  const registry = await loadHandlerRegistry()
  const ready = slugs.filter((s) => missingSettings(registry.get(s)!.module, providers).length === 0)
  const waiting = slugs.filter((s) => !ready.includes(s))
  t.ok(ready.length > 30 && waiting.length > 10, `${ready.length} ready, ${waiting.length} waiting for settings`)
  const published = await sql<{ service: string; slug: string; pay_to: string; enabled: boolean }>`
    select s.name as service, e.slug, s.pay_to, e.enabled from endpoints e join services s on s.id = e.service_id
    join sellers x on x.id = s.seller_id where x.namespace = 'tollgate'`.execute(db)
  t.equal(published.rows.length, slugs.length, 'every handler of this build has its endpoint')
  t.ok(
    published.rows.every((r) => r.enabled),
    'all published: an unpaid call gets the challenge (spec 4.3), whatever the settings',
  )
  t.ok(
    published.rows.every((r) => r.pay_to === receiver),
    'paying the configured receiver',
  )
  t.match(first.out, `hosted endpoints: ${slugs.length} published`)
  t.match(
    first.out,
    `${waiting.length} of them answer paid calls 503 upstream_not_configured (nothing charged) until their provider settings are set`,
  )
  t.match(first.out, /web-search \(BRAVE_SEARCH_API_KEY\)/, 'naming what each one needs')
  const listings = await sql<{
    name: string
    category: string
    tags: string[]
    docs_url: string
  }>`select name, category, tags, docs_url from services order by name`.execute(db)
  t.ok(
    listings.rows.every((r) => r.tags.length > 0 && /\/docs\/endpoints\/tollgate\.json$/.test(r.docs_url)),
    'marketplace entries with tags and a link to their OpenAPI document',
  )
  t.equal(announced.length, 1, 'the change was announced to running proxies')

  const again = await release(env)
  t.equal(again.code, 0, again.out)
  t.match(again.out, 'database is up to date')
  const count = await sql<{ n: string }>`select count(*) as n from endpoints`.execute(db)
  t.equal(Number(count.rows[0]!.n), slugs.length, 'a second release adds nothing')

  const keyed = await release({ ...env, BRAVE_SEARCH_API_KEY: 'a-key' })
  t.equal(keyed.code, 0, keyed.out)
  t.notMatch(keyed.out, /web-search \(/, 'the release that has the setting no longer lists it as waiting')
  t.notMatch(keyed.out, /a-key/, 'and never prints it')
})

t.test('release without a receiver on sandbox migrates and says the hosted services were not published', async (t) => {
  const schema = await testSchema(t, { migrate: false })
  const prefix = uniqueName('tgrelease')
  const r = await release({
    DATABASE_URL: TEST_DATABASE_URL,
    DATABASE_SCHEMA: schema,
    REDIS_URL: TEST_REDIS_URL,
    REDIS_PREFIX: prefix,
    TOLLGATE_RECEIVER_ADDRESS: '',
  })
  t.equal(r.code, 0, r.out)
  t.match(r.out, 'hosted endpoints: not published (TOLLGATE_RECEIVER_ADDRESS is not set)')
  const db = createDb({ databaseUrl: TEST_DATABASE_URL, schema, max: 1 })
  t.teardown(() => db.destroy())
  const n = await sql<{ n: string }>`select count(*) as n from endpoints`.execute(db)
  t.equal(Number(n.rows[0]!.n), 0)
})

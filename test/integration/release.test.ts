import { execFile } from 'node:child_process'
import { Redis } from 'ioredis'
import { sql } from 'kysely'
import t from 'tap'
import { createDb } from '../../src/db/create-db.js'
import { redisKeys } from '../../src/deps.js'
import { loadConfig } from '../../src/config.js'
import { listHandlerSlugs, loadHandlerRegistry } from '../../src/pool/handler-registry.js'
import { registryChannel } from '../../src/services/registry-events.js'
import { TEST_DATABASE_URL, TEST_REDIS_URL, clearRedisPrefix, testSchema, uniqueName } from '../helpers/test-env.js'

// The Procfile `release` step (src/start/release.ts): migrations, then the hosted services
// published, with no chain and no `npm start`.
function release(env: Record<string, string>): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, ['--import', 'tsx', 'src/start/release.ts'], { env: { ...process.env, RPC_URL: '', LOG_LEVEL: 'warn', ...env }, timeout: 120_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, out: stdout + stderr }),
    )
  })
}

t.test('release migrates a fresh database and publishes the hosted services, idempotently', async (t) => {
  const schema = await testSchema(t, { migrate: false })
  const prefix = uniqueName('tgrelease')
  t.teardown(() => clearRedisPrefix(prefix))
  const receiver = `0x${'ab'.repeat(20)}`
  const env = { DATABASE_URL: TEST_DATABASE_URL, DATABASE_SCHEMA: schema, REDIS_URL: TEST_REDIS_URL, REDIS_PREFIX: prefix, TOLLGATE_RECEIVER_ADDRESS: receiver }
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
  // handlers whose provider settings this environment lacks are kept, but not served
  const providers = loadConfig({ ...env, RPC_URL: '' }).handlerProviders
  const registry = await loadHandlerRegistry()
  const ready = slugs.filter((s) => (registry.get(s)!.module.providers ?? []).every((n) => providers[n]))
  const waiting = slugs.filter((s) => !ready.includes(s))
  t.ok(ready.length > 30 && waiting.length > 10, `${ready.length} ready, ${waiting.length} waiting for settings`)
  const published = await sql<{ service: string; slug: string; pay_to: string; enabled: boolean }>`
    select s.name as service, e.slug, s.pay_to, e.enabled from endpoints e join services s on s.id = e.service_id
    join sellers x on x.id = s.seller_id where x.namespace = 'tollgate'`.execute(db)
  t.equal(published.rows.length, slugs.length, 'every handler of this build has its endpoint')
  t.same(new Set(published.rows.filter((r) => r.enabled).map((r) => r.slug)), new Set(ready), 'served: the ones whose settings are there')
  t.ok(published.rows.every((r) => r.pay_to === receiver), 'paying the configured receiver')
  t.match(first.out, `hosted endpoints: ${ready.length} published`)
  t.match(first.out, `${waiting.length} not published until their provider settings are set`)
  t.match(first.out, /web-search \(BRAVE_SEARCH_API_KEY\)/, 'naming what each one needs')
  const listings = await sql<{ name: string; category: string; tags: string[]; docs_url: string }>`select name, category, tags, docs_url from services order by name`.execute(db)
  t.ok(listings.rows.every((r) => r.tags.length > 0 && /\/docs\/endpoints\/tollgate\.json$/.test(r.docs_url)), 'marketplace entries with tags and a link to their OpenAPI document')
  t.equal(announced.length, 1, 'the change was announced to running proxies')

  const again = await release(env)
  t.equal(again.code, 0, again.out)
  t.match(again.out, 'database is up to date')
  const count = await sql<{ n: string }>`select count(*) as n from endpoints`.execute(db)
  t.equal(Number(count.rows[0]!.n), slugs.length, 'a second release adds nothing')

  const enabled = async (slug: string) => (await sql<{ enabled: boolean }>`select enabled from endpoints where slug = ${slug}`.execute(db)).rows[0]?.enabled
  t.equal(await enabled('web-search'), false)
  const keyed = await release({ ...env, BRAVE_SEARCH_API_KEY: 'a-key' })
  t.equal(keyed.code, 0, keyed.out)
  t.equal(await enabled('web-search'), true, 'the release that has the setting publishes it')
  t.notMatch(keyed.out, /a-key/, 'and never prints it')
})

t.test('release without a receiver on sandbox migrates and says the hosted services were not published', async (t) => {
  const schema = await testSchema(t, { migrate: false })
  const prefix = uniqueName('tgrelease')
  const r = await release({ DATABASE_URL: TEST_DATABASE_URL, DATABASE_SCHEMA: schema, REDIS_URL: TEST_REDIS_URL, REDIS_PREFIX: prefix, TOLLGATE_RECEIVER_ADDRESS: '' })
  t.equal(r.code, 0, r.out)
  t.match(r.out, 'hosted endpoints: not published (TOLLGATE_RECEIVER_ADDRESS is not set)')
  const db = createDb({ databaseUrl: TEST_DATABASE_URL, schema, max: 1 })
  t.teardown(() => db.destroy())
  const n = await sql<{ n: string }>`select count(*) as n from endpoints`.execute(db)
  t.equal(Number(n.rows[0]!.n), 0)
})

/**
 * History pages (GET /v1/transactions, /v1/payment-events) of a small user among N payments of
 * others, and of a large seller: first-page latency (p50/p99) of the service's query, against the
 * query as it was before the history indexes (lower(payer) in (...) or endpoint_id in (...), read
 * through payments_created_idx) on the same data in the same run. Service level, no HTTP.
 *
 *   node --import tsx bench/history.bench.ts [payments=1000000] [runs=50]
 *   # needs the test Postgres and Redis (TEST_DATABASE_URL, TEST_REDIS_URL)
 */
import { sql } from 'kysely'
import { createHistory, type HistoryFilters, type HistoryKind } from '../src/services/accounts/history-export.js'
import { testDeps } from '../test/helpers/test-env.js'

const N = Number(process.argv[2] ?? 1_000_000)
const RUNS = Number(process.argv[3] ?? 50)

const teardowns: (() => unknown)[] = []
const deps = await testDeps({ teardown: (fn) => void teardowns.push(fn) })
const db = deps.db

async function user(email: string): Promise<string> {
  return (
    await sql<{ id: string }>`insert into users (email, password_hash) values (${email}, 'x') returning id`.execute(db)
  ).rows[0]!.id
}

async function endpointsOf(owner: string, namespace: string, n: number): Promise<string[]> {
  const seller = await sql<{
    id: string
  }>`insert into sellers (namespace, display_name, owner_user_id) values (${namespace}, 's', ${owner}) returning id`.execute(
    db,
  )
  const service = await sql<{
    id: string
  }>`insert into services (seller_id, name, display_name, pay_to) values (${seller.rows[0]!.id}, 'svc', 's', ${'0x' + '22'.repeat(20)}) returning id`.execute(
    db,
  )
  const rows = await sql<{ id: string }>`insert into endpoints (service_id, slug, methods, price, handler)
    select ${service.rows[0]!.id}, 'ep-' || g, '{GET}', 1000, 'hash-generator' from generate_series(1, ${n}) g returning id`.execute(
    db,
  )
  return rows.rows.map((r) => r.id)
}

// A small user (two agents, one endpoint, 20 payments spread over the whole period); a large seller
// (20 endpoints receiving a tenth of all payments); everyone else: 20,000 payers, one payment a second.
const small = await user('small@bench')
const large = await user('large@bench')
await sql`insert into agents (user_id, name, address, encrypted_key) values (${small}, 'a1', '0xAaAa000000000000000000000000000000000001', 'x'), (${small}, 'a2', '0xAaAa000000000000000000000000000000000002', 'x')`.execute(
  db,
)
const [smallEndpoint] = await endpointsOf(small, 'bench-small', 1)
const largeEndpoints = await endpointsOf(large, 'bench-large', 20)

const t0 = Date.now()
const columns = sql`id, endpoint_id, resource, method, x402_version, network, asset, payer, pay_to, value, valid_after, valid_before, nonce, signature, status, created_at`
await sql`insert into payments (${columns})
  select gen_random_uuid(), case when g % 10 = 0 then (${largeEndpoints}::uuid[])[1 + g % 20] end, 'r', 'GET', 2, 'eip155:84532', 'a',
    '0x' || lpad(to_hex(g % 20000), 40, '0'), 'p', 1000, 0, 1, md5(g::text), 's', 'served', timestamptz '2026-01-01' + g * interval '1 second'
  from generate_series(1, ${N}) g`.execute(db)
await sql`insert into payments (${columns})
  select gen_random_uuid(), case when g % 2 = 0 then ${smallEndpoint}::uuid end, 'r', 'GET', 2, 'eip155:84532', 'a',
    case when g % 2 = 0 then '0x' || lpad(to_hex(900000 + g), 40, '0') else '0xaaaa' || lpad(((g / 2) % 2 + 1)::text, 36, '0') end,
    'p', 1000, 0, 1, md5('s' || g), 's', 'served', timestamptz '2026-01-01' + (g * ${Math.floor(N / 20)}) * interval '1 second'
  from generate_series(1, 20) g`.execute(db)
await sql`insert into payment_events (payment_id, type, to_status, created_at) select id, 'verified', 'verified', created_at from payments`.execute(
  db,
)
await sql`analyze`.execute(db)
console.log(`seeded ${N.toLocaleString('en')} payments and their events in ${((Date.now() - t0) / 1000).toFixed(1)} s`)

// The query before the history indexes, reduced to what is timed here (ids only would flatter it:
// it fetched the same row columns).
function before(kind: HistoryKind, userId: string, order: 'asc' | 'desc') {
  const mine = sql`lower(p.payer) in (select lower(address) from agents where user_id = ${userId})`
  const sold = sql`p.endpoint_id in (select e.id from endpoints e join services s on s.id = e.service_id join sellers sl on sl.id = s.seller_id where sl.owner_user_id = ${userId})`
  const dir = sql.raw(order)
  return kind === 'transactions'
    ? sql`select p.* from payments p where (${mine} or ${sold}) order by p.created_at ${dir}, p.id ${dir} limit 21`
    : sql`select ev.* from payment_events ev join payments p on p.id = ev.payment_id where (${mine} or ${sold}) order by ev.created_at ${dir}, ev.id ${dir} limit 21`
}

async function time(fn: () => Promise<unknown>): Promise<{ p50: number; p99: number }> {
  for (let i = 0; i < 3; i++) await fn()
  const ms: number[] = []
  for (let i = 0; i < RUNS; i++) {
    const s = performance.now()
    await fn()
    ms.push(performance.now() - s)
  }
  ms.sort((a, b) => a - b)
  return { p50: ms[Math.floor(ms.length / 2)]!, p99: ms[Math.min(ms.length - 1, Math.floor(ms.length * 0.99))]! }
}

const cases: Array<[string, HistoryKind, string, HistoryFilters]> = [
  ['small user, transactions asc', 'transactions', small, {}],
  ['small user, transactions desc', 'transactions', small, { order: 'desc' }],
  ['small user, payment events desc', 'payment_events', small, { order: 'desc' }],
  ['large seller, transactions desc', 'transactions', large, { order: 'desc' }],
  ['large seller, payment events desc', 'payment_events', large, { order: 'desc' }],
]

// before: the old query with the index it used (created like the first migration did)
await sql`create index payments_created_idx on payments (created_at, id)`.execute(db)
await sql`analyze payments`.execute(db)
const baseline = new Map<string, { p50: number; p99: number }>()
for (const [name, kind, userId, f] of cases)
  baseline.set(name, await time(() => before(kind, userId, f.order ?? 'asc').execute(db)))
await sql`drop index payments_created_idx`.execute(db)

const history = createHistory({ db, databaseUrl: deps.config.databaseUrl, databaseSchema: deps.config.databaseSchema })
const rows: string[] = []
for (const [name, kind, userId, f] of cases) {
  const b = baseline.get(name)!
  const a = await time(() => history.page(kind, userId, f, 20))
  rows.push(
    `| ${name} | ${b.p50.toFixed(2)} | ${b.p99.toFixed(2)} | ${a.p50.toFixed(2)} | ${a.p99.toFixed(2)} | ${(b.p50 / a.p50).toFixed(1)}x |`,
  )
}
console.log(`\nfirst page of 20 among ${N.toLocaleString('en')} payments, ${RUNS} runs each (ms)\n`)
console.log('| case | before p50 | before p99 | after p50 | after p99 | p50 speed-up |\n|---|---:|---:|---:|---:|---:|')
console.log(rows.join('\n'))

for (const fn of teardowns.reverse()) await fn()

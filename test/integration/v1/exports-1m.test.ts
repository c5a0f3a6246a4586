import v8 from 'node:v8'
import vm from 'node:vm'
import { sql } from 'kysely'
import pg from 'pg'
import t from 'tap'
import { request } from 'undici'
import { accountsApp, userWithKey } from '../../helpers/accounts.js'

// The 1,000,000-row export streams: rows are generated in SQL, the CSV is read over a real socket
// and only counted, and the heap of this process (server and client both) is sampled throughout.
// Bound: the live heap (measured after a forced GC every 16 MiB received) may grow by at most 64 MiB over
// its starting point while ~380 MB of CSV passes; loading the rows would need several hundred MiB.
const HEAP_BOUND = 64 * 1024 * 1024
v8.setFlagsFromString('--expose-gc')
const gc = vm.runInNewContext('gc') as () => void
t.setTimeout(600_000)
t.test('1,000,000-row CSV export with bounded memory', async (t) => {
  const { deps, app } = await accountsApp(t)
  const { auth } = await userWithKey(deps)
  const agent = (
    await app.inject({ method: 'POST', url: '/v1/agents', headers: auth, payload: { name: 'bulk' } })
  ).json().address
  // The schema is this test's own: drop the indexes the export does not use, so the bulk insert is quick,
  // and insert on a connection without the pool's 30 s query timeout.
  const bulk = new pg.Client({
    connectionString: deps.config.databaseUrl,
    options: `-c search_path=${deps.config.databaseSchema}`,
  })
  await bulk.connect()
  t.teardown(() => bulk.end())
  await bulk.query(
    'drop index payments_payer_nonce_idx; drop index payments_status_idx; drop index payments_payer_status_idx; alter table payments drop constraint payments_pkey cascade; set synchronous_commit = off',
  )
  const started = Date.now()
  await bulk.query(
    sql`insert into payments (id, resource, method, x402_version, network, asset, payer, pay_to, value, valid_after, valid_before, nonce, signature, status, created_at)
    select gen_random_uuid(), 'https://proxy/bulk/svc/ep', 'GET', 2, 'eip155:84532', '0x036CbD53842c5426634e7929541eC2318f3dCF7e', ${agent}, '0x2222222222222222222222222222222222222222',
      (g % 100000)::numeric, 0, 2000000000, lpad(to_hex(g), 64, '0'), '0x', 'settled', timestamptz '2026-01-01' + g * interval '1 millisecond'
    from generate_series(1, 1000000) g`
      .compile(deps.db)
      .sql.replace('$1', `'${agent}'`),
  )
  t.comment(`inserted 1,000,000 rows in ${Date.now() - started} ms`)
  const base = await app.listen({ port: 0, host: '127.0.0.1' })
  gc()
  const start = process.memoryUsage().heapUsed
  let peak = start
  const t0 = Date.now()
  const res = await request(`${base}/v1/transactions?format=csv`, { headers: auth })
  t.equal(res.statusCode, 200)
  let newlines = 0
  let bytes = 0
  let nextSample = 16 * 1024 * 1024
  for await (const chunk of res.body as AsyncIterable<Buffer>) {
    bytes += chunk.length
    for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) newlines++
    if (bytes >= nextSample) {
      nextSample += 16 * 1024 * 1024
      gc()
      peak = Math.max(peak, process.memoryUsage().heapUsed)
    }
  }
  t.comment(`streamed in ${Date.now() - t0} ms`)
  t.equal(newlines, 1_000_001, 'header + 1,000,000 rows')
  t.ok(bytes > 100_000_000, `streamed ${(bytes / 1e6).toFixed(0)} MB`)
  t.ok(
    peak - start < HEAP_BOUND,
    `heap grew by ${((peak - start) / 1048576).toFixed(1)} MiB (bound ${HEAP_BOUND / 1048576} MiB)`,
  )
})

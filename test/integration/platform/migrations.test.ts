import t from 'tap'
import { NO_MIGRATIONS } from 'kysely'
import { sql } from 'kysely'
import { createDb } from '../../../src/db/create-db.js'
import { createMigrator, migrateToLatest } from '../../../src/db/migrate.js'
import { despiteOtherRuns, TEST_DATABASE_URL, testSchema } from '../../helpers/test-env.js'

async function tables(schema: string): Promise<string[]> {
  const db = createDb({ databaseUrl: TEST_DATABASE_URL, schema, max: 1 })
  try {
    const r = await sql<{
      table_name: string
    }>`select table_name from information_schema.tables where table_schema = ${schema} order by 1`.execute(db)
    return r.rows.map((x) => x.table_name)
  } finally {
    await db.destroy()
  }
}

t.test('up to latest and back down on a fresh schema', async (t) => {
  const schema = await testSchema(t, { migrate: false })
  const db = createDb({ databaseUrl: TEST_DATABASE_URL, schema, max: 1 })
  t.teardown(() => db.destroy())
  const up = await despiteOtherRuns(schema, () => migrateToLatest(db, schema))
  t.ok(up.results!.length >= 2, 'applied the migrations')
  const after = await tables(schema)
  for (const name of [
    'payments',
    'payment_events',
    'sellers',
    'services',
    'endpoints',
    'webhook_endpoints',
    'webhook_events',
    'webhook_deliveries',
    'webhook_cursors',
  ])
    t.ok(after.includes(name), `${name} exists`)

  const again = await despiteOtherRuns(schema, () => migrateToLatest(db, schema))
  t.equal(again.results!.length, 0, 'second run is a no-op')

  const down = await despiteOtherRuns(schema, () => createMigrator(db, schema).migrateTo(NO_MIGRATIONS))
  t.error(down.error)
  const left = (await tables(schema)).filter((n) => !n.startsWith('kysely_'))
  t.same(left, [], 'every table dropped by the down migrations')
  const reup = await despiteOtherRuns(schema, () => migrateToLatest(db, schema))
  t.equal(reup.results!.length, up.results!.length, 'migrates up again after down')
})

t.test('two concurrent runs do not corrupt', async (t) => {
  const schema = await testSchema(t, { migrate: false })
  const a = createDb({ databaseUrl: TEST_DATABASE_URL, schema, max: 1 })
  const b = createDb({ databaseUrl: TEST_DATABASE_URL, schema, max: 1 })
  t.teardown(async () => {
    await a.destroy()
    await b.destroy()
  })
  // a run that met another test's dropped schema in the introspection applied nothing and is tried again
  const [ra, rb] = await Promise.all([
    despiteOtherRuns(schema, () => migrateToLatest(a, schema)),
    despiteOtherRuns(schema, () => migrateToLatest(b, schema)),
  ])
  const applied = ra.results!.length + rb.results!.length
  const all = await createMigrator(a, schema).getMigrations()
  t.equal(applied, all.length, 'each migration applied exactly once across both runs')
  t.ok(
    all.every((m) => m.executedAt),
    'all executed',
  )
})

t.test('the ledger enforces its invariants', async (t) => {
  const schema = await testSchema(t)
  const db = createDb({ databaseUrl: TEST_DATABASE_URL, schema, max: 1 })
  t.teardown(() => db.destroy())
  const row = {
    id: crypto.randomUUID(),
    endpoint_id: null,
    resource: 'http://x/a/b/c',
    method: 'GET',
    x402_version: 2,
    network: 'eip155:84532',
    asset: '0x036cbd53842c5426634e7929541ec2318f3dcf7e',
    payer: '0x' + '1'.repeat(40),
    pay_to: '0x' + '2'.repeat(40),
    value: 1000n,
    valid_after: 0,
    valid_before: 2_000_000_000,
    nonce: '0x' + 'ab'.repeat(32),
    signature: '0x',
    status: 'verified' as const,
    tx_hash: null,
    failure_reason: null,
    settled_at: null,
  }
  await db.insertInto('payments').values(row).execute()
  // payments is partitioned by day: (payer, nonce) is unique in payment_nonces, which the ledger
  // writer claims before it records a payment (test/integration/scale/ledger-partitions.test.ts)
  const claim = (id: string) =>
    sql`insert into payment_nonces (payer, nonce, valid_before, payment_id) values (${row.payer}, ${row.nonce}, ${row.valid_before}, ${id})`.execute(
      db,
    )
  await claim(row.id)
  await t.rejects(claim(crypto.randomUUID()), /payments_payer_nonce_unique/, 'payer + nonce is unique')
  const big = 2n ** 256n - 1n
  await db
    .insertInto('payments')
    .values({ ...row, id: crypto.randomUUID(), nonce: '0x' + 'cd'.repeat(32), value: big })
    .execute()
  const back = await db
    .selectFrom('payments')
    .select('value')
    .where('nonce', '=', '0x' + 'cd'.repeat(32))
    .executeTakeFirstOrThrow()
  t.equal(back.value, big.toString(), 'uint256 values round-trip exactly')
  await db
    .insertInto('payment_events')
    .values({
      payment_id: row.id,
      type: 'verified',
      from_status: null,
      to_status: 'verified',
      reason: null,
      data: null,
    })
    .execute()
  await t.rejects(db.updateTable('payment_events').set({ reason: 'x' }).execute(), /append-only/)
  await t.rejects(db.deleteFrom('payment_events').execute(), /append-only/)
})

t.test('agent_payments carries only what its per-payment insert needs', async (t) => {
  const schema = await testSchema(t)
  const db = createDb({ databaseUrl: TEST_DATABASE_URL, schema, max: 1 })
  t.teardown(() => db.destroy())
  const idx = await sql<{
    indexname: string
  }>`select indexname from pg_indexes where schemaname = ${schema} and tablename = 'agent_payments' order by 1`.execute(
    db,
  )
  t.same(
    idx.rows.map((r) => r.indexname),
    [
      'agent_payments_agent_month_idx',
      'agent_payments_open_channel_vouchers',
      'agent_payments_open_idx',
      'agent_payments_open_vouchers',
      'agent_payments_payer_nonce_key',
      'agent_payments_pkey',
    ],
    'primary key, payer + nonce, the month window, the open-reservation sweep, and the open vouchers (deferred) and channel vouchers (batch-settlement) a newer one supersedes (both partial: reserved rows only)',
  )
  const fks = await sql<{ conname: string }>`
    select c.conname from pg_constraint c join pg_class r on r.oid = c.conrelid join pg_namespace n on n.oid = r.relnamespace
    where n.nspname = ${schema} and r.relname in ('agent_payments', 'agent_payment_events') and c.contype = 'f'`.execute(
    db,
  )
  t.same(fks.rows, [], 'no referential check (and agent row lock) per inserted payment')
})

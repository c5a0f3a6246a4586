import { randomUUID } from 'node:crypto'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { privateKeyToAccount } from 'viem/accounts'
import { sql, type Kysely } from 'kysely'
import t, { type Test } from 'tap'
import type { Database } from '../../../src/db/database.js'
import { createDb } from '../../../src/db/create-db.js'
import {
  ensureLedgerPartitions,
  listLedgerPartitions,
  NONCE_MARGIN_SECONDS,
  pruneExpiredNonces,
  utcDay,
} from '../../../src/ledger/partitions.js'
import { createMigrator, ensureSchema, migrateToLatest } from '../../../src/db/migrate.js'
import { createLedgerWriter, type NewProxyPayment } from '../../../src/ledger/ledger-writer.js'
import { createHistory, type HistoryKind } from '../../../src/services/accounts/history-export.js'
import { decodePaymentHeader } from '../../../src/x402/decode-payment.js'
import { verifyRequirements } from '../../../src/x402/verify-requirements.js'
import { decodeRequired, signFor, v2Header } from '../../helpers/pay.js'
import { startTestPlatform } from '../../helpers/platform.js'
import { clearRedisPrefix, despiteOtherRuns, TEST_DATABASE_URL, testSchema } from '../../helpers/test-env.js'
import { sampleChallenge } from '../../unit/x402/fixtures.js'
import { b64, NOW, v2Payload } from '../../unit/x402/payloads.js'

const PREVIOUS = '2026-11-26T1020-upto-payments'
const AGENT = '0x1111111111111111111111111111111111111111'
const OTHER = '0x3333333333333333333333333333333333333333'
const STATUSES = ['verified', 'served', 'settling', 'settled', 'voided', 'failed'] as const

function schemaDb(t: Test, schema: string): Kysely<Database> {
  const db = createDb({ databaseUrl: TEST_DATABASE_URL, schema, max: 2 })
  t.teardown(() => db.destroy())
  return db
}

const nonceOf = (i: number) => '0x' + i.toString(16).padStart(64, '0')

function payment(nonce: string, validBefore: number, payer = AGENT): NewProxyPayment {
  return {
    id: randomUUID(),
    endpoint_id: null,
    resource: 'http://proxy/a/b/c',
    method: 'GET',
    x402_version: 2,
    network: 'eip155:84532',
    asset: '0x036cbd53842c5426634e7929541ec2318f3dcf7e',
    payer,
    pay_to: '0x2222222222222222222222222222222222222222',
    value: '1000',
    valid_after: 0,
    valid_before: validBefore,
    nonce,
    signature: '0x',
  }
}

async function readAll(stream: NodeJS.ReadableStream): Promise<string> {
  let s = ''
  for await (const chunk of stream) s += String(chunk)
  return s
}

/** Everything a user or the ledger sees: rows, statuses, every history page and the exports. */
async function snapshot(db: Kysely<Database>, schema: string, userId: string) {
  const history = createHistory({ db, databaseUrl: TEST_DATABASE_URL, databaseSchema: schema })
  const rows = async (q: string) => (await sql.raw<{ r: unknown }>(q).execute(db)).rows.map((x) => x.r)
  const pages = async (kind: HistoryKind, f: Record<string, string>) => {
    const all: unknown[] = []
    let cursor: string | undefined
    do {
      const p = await history.page(kind, userId, { ...f, cursor }, 7)
      all.push(p.data)
      cursor = p.next_cursor ?? undefined
    } while (cursor)
    return all
  }
  return {
    payments: await rows(`select to_jsonb(p) as r from payments p order by id`),
    events: await rows(`select to_jsonb(e) as r from payment_events e order by id`),
    statuses: await rows(
      `select jsonb_build_object(status, count(*)) as r from payments group by status order by status`,
    ),
    batch: await rows(
      `select jsonb_build_object('batch', i.batch_id, 'payment', p.id, 'status', p.status) as r
       from settlement_batch_items i join payments p on p.id = i.payment_id order by p.id`,
    ),
    history: [
      await pages('transactions', {}),
      await pages('transactions', { order: 'desc', status: 'settled,served' }),
      await pages('payment_events', {}),
      await pages('payment_events', { order: 'desc', from: new Date(Date.now() - 2 * 86400_000).toISOString() }),
    ],
    exports: [
      await readAll(history.export('transactions', userId, {}, 'csv')),
      await readAll(history.export('payment_events', userId, {}, 'ndjson')),
    ],
  }
}

t.test('the conversion to day partitions keeps every row, status and history answer', async (t) => {
  const schema = await testSchema(t, { migrate: false })
  const db = schemaDb(t, schema)
  await ensureSchema(db, schema)
  const migrator = createMigrator(db, schema)
  const to = await despiteOtherRuns(schema, () => migrator.migrateTo(PREVIOUS))
  t.error(to.error, `migrated up to ${PREVIOUS}`)

  const user = (
    await sql<{ id: string }>`insert into users (email, password_hash) values ('p@x.test', 'x') returning id`.execute(
      db,
    )
  ).rows[0]!.id
  await sql`insert into agents (user_id, name, address, encrypted_key) values (${user}, 'a', ${AGENT}, 'x')`.execute(db)
  // 150 payments over the last ~4 days (two days of them more than a day old), every status, two
  // payers; one or two events each; a settlement batch; a withdrawal event from the shared sequence
  await sql`
    insert into payments (id, resource, method, x402_version, network, asset, payer, pay_to, value, valid_after,
                          valid_before, nonce, signature, status, tx_hash, created_at, updated_at)
    select gen_random_uuid(), 'http://proxy/a/b/c', 'GET', 2, 'eip155:84532', '0x036cbd53842c5426634e7929541ec2318f3dcf7e',
      case when g % 3 = 0 then ${OTHER} else ${AGENT} end, '0x2222222222222222222222222222222222222222', g * 10, 0,
      extract(epoch from now())::bigint + case when g % 2 = 0 then 300 else -86400 end,
      lpad(to_hex(g), 64, '0'), '0x', (${sql.val([...STATUSES])}::text[])[1 + g % 6],
      case when g % 6 = 3 then '0x' || lpad(to_hex(g), 64, 'f') end,
      now() - g * interval '37 minutes', now() - g * interval '37 minutes' + interval '5 seconds'
    from generate_series(1, 150) g`.execute(db)
  await sql`insert into payment_events (payment_id, type, from_status, to_status, created_at)
    select id, 'verified', null, 'verified', created_at from payments`.execute(db)
  await sql`insert into payment_events (payment_id, type, from_status, to_status, reason, data, created_at)
    select id, status, 'verified', status, 'line one
line "two"', '{"k": [1, 2]}', updated_at from payments where status <> 'verified'`.execute(db)
  const batch = randomUUID()
  await sql`insert into settlement_batches (id, network, asset, relayer, nonce, tx_hash, raw_tx, from_block, size, status)
    values (${batch}, 'eip155:84532', '0x036cbd53842c5426634e7929541ec2318f3dcf7e', '0xrelayer', 1, '0xtx', '0xraw', 1, 3, 'confirmed')`.execute(
    db,
  )
  await sql`insert into settlement_batch_items (batch_id, payment_id)
    select ${batch}, id from payments where status = 'settled' order by id limit 3`.execute(db)
  await sql`insert into withdrawal_events (withdrawal_id, type) values (gen_random_uuid(), 'requested')`.execute(db)

  // today's history code also reads the calls served on a sign-in (a later migration's table): an
  // empty stand-in while the previous schema is read, gone before the migrations run
  await sql`create table access_uses (id uuid, created_at timestamptz, payer text, endpoint_id uuid, scope_id uuid,
    payment_id uuid, resource text, method text, pay_to text)`.execute(db)
  const before = await snapshot(db, schema, user)
  await sql`drop table access_uses`.execute(db)
  t.equal(before.payments.length, 150)
  t.ok((before.history[0] as unknown[][]).flat().length > 50, 'the user has a history to compare')

  const up = await despiteOtherRuns(schema, () => migrateToLatest(db, schema))
  t.ok(
    up.results!.some((r) => r.migrationName === '2026-11-26T1030-partitioned-ledger' && r.status === 'Success'),
    'the conversion ran',
  )
  const after = await snapshot(db, schema, user)
  t.same(after.payments, before.payments, 'every payment row is unchanged')
  t.same(after.events, before.events, 'every event row is unchanged')
  t.same(after.statuses, before.statuses, 'status counts unchanged')
  t.same(after.batch, before.batch, 'settlement batch items still find their payments')
  t.same(after.history, before.history, 'every history page is unchanged')
  t.same(after.exports, before.exports, 'the CSV and NDJSON exports are byte for byte the same')

  const parts = await listLedgerPartitions(db)
  const { rows: placed } = await sql<{ misplaced: string; defaulted: string }>`
    select count(*) filter (where tableoid::regclass::text <> 'payments_p' || to_char(created_at at time zone 'UTC', 'YYYYMMDD')) as misplaced,
           count(*) filter (where tableoid::regclass::text = 'payments_default') as defaulted
    from payments`.execute(db)
  t.same(placed[0], { misplaced: '0', defaulted: '0' }, 'every payment sits in the partition of its UTC day')
  t.ok(
    parts.some((p) => p.day === utcDay(new Date(), 7) && p.table === 'payments'),
    'days are created a week ahead',
  )
  t.ok(parts.filter((p) => p.table === 'payment_events').length >= 10, 'payment_events is partitioned by day too')
  const { rows: nonces } = await sql<{ n: string }>`select count(*) as n from payment_nonces`.execute(db)
  t.equal(Number(nonces[0]!.n), 75, 'the nonces still inside their window are claimed (the expired ones are not)')

  const writer = createLedgerWriter(db)
  const open = await writer.record(payment('2'.padStart(64, '0'), Math.floor(Date.now() / 1000) + 300))
  t.equal(open, 'duplicate', 'a converted payment still inside its window cannot be recorded again')
  const { rows: ev } = await sql<{ ok: boolean }>`
    insert into withdrawal_events (withdrawal_id, type) values (gen_random_uuid(), 'requested')
    returning id > (select max(id) from payment_events) as ok`.execute(db)
  t.ok(ev[0]!.ok, 'payment_events_id_seq carries on (withdrawal_events shares it)')
  await t.rejects(sql`update payment_events set reason = 'x'`.execute(db), /append-only/, 'still append-only')
  await t.rejects(sql`delete from payment_events`.execute(db), /append-only/, 'still append-only')

  const down = await despiteOtherRuns(schema, () => migrator.migrateTo(PREVIOUS))
  t.error(down.error, 'and back down')
  const { rows: back } = await sql<{ n: string }>`select count(*) as n from payments`.execute(db)
  t.equal(Number(back[0]!.n), 150, 'down keeps every row too')
  await writer.drain()
})

t.test('the replay guard across partitions', async (t) => {
  const schema = await testSchema(t)
  const db = schemaDb(t, schema)
  // yesterday's partition (the migration starts at today)
  await ensureLedgerPartitions(db, 7, new Date(Date.now() - 86400_000))
  const writer = createLedgerWriter(db)
  t.teardown(() => writer.drain())
  const nowS = Math.floor(Date.now() / 1000)

  t.test('a replay whose original sits in the previous day', async (t) => {
    const original = payment(nonceOf(0xa1), nowS + 300)
    t.equal(await writer.record(original, 'served'), 'recorded')
    // the original was recorded yesterday, at 23:59:59 (the row moves to that day's partition)
    await sql`update payments set created_at = date_trunc('day', now() at time zone 'UTC') at time zone 'UTC' - interval '1 second'
      where id = ${original.id}`.execute(db)
    const { rows } = await sql<{
      part: string
    }>`select tableoid::regclass::text as part from payments where id = ${original.id}`.execute(db)
    t.equal(rows[0]!.part, `payments_p${utcDay(new Date(), -1).replaceAll('-', '')}`, 'the original is in yesterday')
    t.equal(
      await writer.record({ ...original, id: randomUUID() }, 'served'),
      'duplicate',
      'the replay today is refused',
    )
    const { rows: n } = await sql<{
      n: string
    }>`select count(*) as n from payments where nonce = ${original.nonce}`.execute(db)
    t.equal(n[0]!.n, '1', 'one payment for the nonce')
  })

  t.test('concurrent replays from two writers: exactly one is recorded', async (t) => {
    const other = createLedgerWriter(db)
    t.teardown(() => other.drain())
    const p = payment(nonceOf(0xa2), nowS + 300)
    const outcomes = await Promise.all(
      Array.from({ length: 16 }, (_, i) => (i % 2 ? writer : other).record({ ...p, id: randomUUID() })),
    )
    t.equal(outcomes.filter((o) => o === 'recorded').length, 1)
    t.equal(outcomes.filter((o) => o === 'duplicate').length, 15)
  })

  t.test('after the window the proxy refuses the authorization, and only then is the nonce forgotten', async (t) => {
    // an authorization exactly like the fixtures' (validBefore = NOW + 60), recorded while valid
    const ch = sampleChallenge()
    const decoded = decodePaymentHeader({ paymentSignature: b64(v2Payload(ch)) }, 16384)
    if (!decoded.ok) throw new Error(decoded.message)
    const validBefore = NOW + ch.terms.maxTimeoutSeconds
    t.ok(verifyRequirements(decoded, ch, NOW).ok, 'accepted inside its window')
    const p = payment(decoded.payload.payload.authorization.nonce.toLowerCase(), validBefore)
    t.equal(await writer.record(p, 'served'), 'recorded')
    const claimed = async () =>
      Number(
        (await sql<{ n: string }>`select count(*) as n from payment_nonces where nonce = ${p.nonce}`.execute(db))
          .rows[0]!.n,
      )
    await pruneExpiredNonces(db, validBefore * 1000)
    t.equal(await claimed(), 1, 'kept at validBefore')
    await pruneExpiredNonces(db, (validBefore + NONCE_MARGIN_SECONDS - 1) * 1000)
    t.equal(await claimed(), 1, 'kept through the clock margin')
    t.equal(await writer.record({ ...p, id: randomUUID() }), 'duplicate', 'a replay meanwhile is refused')
    for (const at of [validBefore - 5, validBefore, validBefore + NONCE_MARGIN_SECONDS + 1]) {
      const r = verifyRequirements(decoded, ch, at)
      t.equal(
        r.ok ? 'ok' : r.reason,
        'invalid_exact_evm_payload_authorization_valid_before',
        `refused at +${at - NOW} s`,
      )
    }
    t.ok((await pruneExpiredNonces(db, (validBefore + NONCE_MARGIN_SECONDS + 1) * 1000)) >= 1)
    t.equal(await claimed(), 0, 'forgotten after it')
    const { rows } = await sql<{ n: string }>`select count(*) as n from payments where id = ${p.id}`.execute(db)
    t.equal(rows[0]!.n, '1', 'the payment itself stays in the ledger')
  })
})

t.test("through the proxy: a replay of yesterday's payment, Redis forgotten, is refused by Postgres", async (t) => {
  const fixtures = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../fixtures/handlers')
  const platform = await startTestPlatform(t, { proxy: { handlersDir: fixtures } })
  const { deps, proxy } = platform
  await ensureLedgerPartitions(deps.db, 7, new Date(Date.now() - 86400_000))
  const payer = privateKeyToAccount(platform.devnet.accounts.demoPayer.privateKey)
  const echo = '/tollgate/toolbox/echo?msg=hi'
  const required = decodeRequired((await proxy.inject(echo)).headers['payment-required'] as string)
  const signed = await signFor(payer, required)
  const headers = { 'payment-signature': v2Header(required, signed) }
  const first = await proxy.inject({ url: echo, headers })
  t.equal(first.statusCode, 200, first.body)
  const nonce = signed.authorization.nonce.toLowerCase()
  await sql`update payments set created_at = date_trunc('day', now() at time zone 'UTC') at time zone 'UTC' - interval '1 second'
    where nonce = ${nonce}`.execute(deps.db)
  const { rows } = await sql<{
    part: string
  }>`select tableoid::regclass::text as part from payments where nonce = ${nonce}`.execute(deps.db)
  t.equal(rows[0]!.part, `payments_p${utcDay(new Date(), -1).replaceAll('-', '')}`, 'the original is in yesterday')
  // the proxy's Redis guard remembers nonces too: without it, Postgres alone must refuse
  await clearRedisPrefix(platform.env.REDIS_PREFIX!)
  const replay = await proxy.inject({ url: echo, headers })
  t.equal(replay.statusCode, 402, replay.body)
  t.equal(replay.json().error, 'invalid_exact_evm_nonce_already_used')
  const { rows: n } = await sql<{ n: string }>`select count(*) as n from payments where nonce = ${nonce}`.execute(
    deps.db,
  )
  t.equal(n[0]!.n, '1', 'one payment for the nonce')
})

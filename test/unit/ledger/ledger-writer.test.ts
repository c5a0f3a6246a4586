import { randomUUID } from 'node:crypto'
import t from 'tap'
import { createDb } from '../../../src/db/create-db.js'
import { createLedgerWriter, type AccessGrantWrite, type IdRelease } from '../../../src/ledger/ledger-writer.js'
import { TEST_DATABASE_URL, testSchema } from '../../helpers/test-env.js'
import { paymentRow } from '../../helpers/payment-row.js'

/** A migrated schema of its own (with the transition guard), and a pool on it. */
async function testDb(t: { teardown(fn: () => unknown): void }) {
  const db = createDb({ databaseUrl: TEST_DATABASE_URL, schema: await testSchema(t), max: 4 })
  t.teardown(() => db.destroy())
  return db
}

/** The sizes of the statements that wrote these payments' first events: one transaction, one now(). */
async function batchSizes(db: Awaited<ReturnType<typeof testDb>>, ids: string[]): Promise<number[]> {
  const rows = await db
    .selectFrom('payment_events')
    .select(({ fn }) => ['created_at', fn.countAll<string>().as('n')])
    .where('payment_id', 'in', ids)
    .groupBy('created_at')
    .orderBy('created_at')
    .execute()
  return rows.map((r) => Number(r.n))
}

t.test('concurrent records are written together, at most maxItems a statement, in the order they came', async (t) => {
  const db = await testDb(t)
  const ledger = createLedgerWriter(db, { maxItems: 4, maxInFlight: 1 })
  const rows = Array.from({ length: 10 }, () => paymentRow())
  t.same(await Promise.all(rows.map((r) => ledger.record(r))), Array(10).fill('recorded'))
  t.same(
    await batchSizes(
      db,
      rows.map((r) => r.id),
    ),
    [4, 4, 2],
    'three statements for ten records',
  )

  const alone = paymentRow()
  t.equal(await ledger.record(alone), 'recorded')
  t.same(await batchSizes(db, [alone.id]), [1], 'an idle writer writes one record at once, no timer')
})

t.test('a duplicate (payer, nonce) in the same batch is refused alone; the batch is written', async (t) => {
  const db = await testDb(t)
  const ledger = createLedgerWriter(db, { maxItems: 8, maxInFlight: 1 })
  const first = paymentRow()
  const twin = paymentRow({ payer: first.payer, nonce: first.nonce })
  const other = paymentRow()
  t.same(await Promise.all([ledger.record(first), ledger.record(twin), ledger.record(other)]), [
    'recorded',
    'duplicate',
    'recorded',
  ])
  t.same(await batchSizes(db, [first.id, other.id]), [2], 'one statement')
  t.notOk(await db.selectFrom('payments').select('id').where('id', '=', twin.id).executeTakeFirst(), 'no row')
})

t.test(
  'records and outcomes of other payments share a statement; an outcome moves only a verified payment',
  async (t) => {
    const db = await testDb(t)
    const ledger = createLedgerWriter(db, { maxItems: 16, maxInFlight: 1 })
    const [a, b, c] = [paymentRow(), paymentRow(), paymentRow()]
    t.same(await Promise.all([ledger.record(a), ledger.record(b, 'served')]), ['recorded', 'recorded'])

    const late = paymentRow()
    t.same(
      await Promise.all([
        ledger.finish(a.id, 'voided', 'handler_failed'),
        ledger.finish(b.id, 'voided', 'too_late'),
        ledger.record(late),
        ledger.record(c, 'voided', 'handler_failed'),
      ]),
      [true, false, 'recorded', 'recorded'],
      'b was served: not voided',
    )
    const events = await db
      .selectFrom('payment_events')
      .select(['payment_id', 'from_status', 'to_status', 'reason', 'created_at'])
      .where('payment_id', 'in', [a.id, b.id, c.id, late.id])
      .orderBy('id')
      .execute()
    const line = (e: (string | null)[]) => e.join(' ')
    t.same(
      events.map((e) => line([e.payment_id, e.from_status, e.to_status, e.reason])).sort(),
      [
        [a.id, null, 'verified', null],
        [b.id, null, 'served', null],
        [a.id, 'verified', 'voided', 'handler_failed'],
        [late.id, null, 'verified', null],
        [c.id, null, 'voided', 'handler_failed'],
      ]
        .map(line)
        .sort(),
      'one event a new row, one a move, none for the refused outcome',
    )
    const second = events.filter((e) => e.payment_id !== b.id && !(e.payment_id === a.id && e.to_status === 'verified'))
    t.equal(
      new Set(second.map((e) => e.created_at.toISOString())).size,
      1,
      'the outcome and the records: one statement',
    )
  },
)

t.test('a payment is recorded only in a status it may start in; nothing is written', async (t) => {
  const db = await testDb(t)
  const ledger = createLedgerWriter(db)
  for (const status of ['settling', 'settled', 'failed'] as const) {
    const row = paymentRow()
    await t.rejects(ledger.record(row, status as never), {
      message: `payment ledger: a payment cannot be recorded as ${status}`,
    })
  }
  t.equal((await db.selectFrom('payments').select('id').execute()).length, 0)
})

t.test('drain waits for every write in flight', async (t) => {
  const db = await testDb(t)
  const ledger = createLedgerWriter(db, { maxItems: 2, maxInFlight: 1 })
  const rows = Array.from({ length: 5 }, () => paymentRow())
  const writes = rows.map((r) => ledger.record(r))
  await ledger.drain()
  t.equal((await db.selectFrom('payments').select('id').execute()).length, 5, 'all five there after drain')
  t.same(await Promise.all(writes), Array(5).fill('recorded'))
})

t.test("a payment-identifier's release goes in its outcome's statement, only when that write applied", async (t) => {
  const db = await testDb(t)
  const ledger = createLedgerWriter(db, { maxItems: 16, maxInFlight: 1 })
  const [hosted, twin, upstream, lost] = [paymentRow(), paymentRow(), paymentRow(), paymentRow()]
  const claimRow = (id: string, paymentId: string, payer: string) => ({
    payer,
    payment_identifier: id,
    fingerprint: 'fp',
    payment_id: paymentId,
    claimed_until: new Date(Date.now() + 60_000),
    expires_at: new Date(Date.now() + 86_400_000),
  })
  const release = (payer: string, id: string, body?: string): IdRelease => ({
    payer,
    id,
    fingerprint: 'fp',
    keepSeconds: 3600,
    answer: body === undefined ? undefined : { status: 200, contentType: 'application/json', body: Buffer.from(body) },
  })
  await db
    .insertInto('payment_identifiers')
    .values([
      claimRow('id-hosted-0000000001', hosted.id, hosted.payer),
      claimRow('id-twin-000000000001', twin.id, twin.payer),
      claimRow('id-upstream-00000001', upstream.id, upstream.payer),
    ])
    .execute()
  t.equal(await ledger.record(upstream), 'recorded', 'a record-first call: verified first')
  t.equal(
    await ledger.record(paymentRow({ payer: twin.payer, nonce: twin.nonce })),
    'recorded',
    "twin's nonce is taken",
  )

  const rh = release(hosted.payer, 'id-hosted-0000000001', '{"ok":1}')
  const rt = release(twin.payer, 'id-twin-000000000001', '{"no":1}')
  const ru = release(upstream.payer, 'id-upstream-00000001')
  const rl = release(lost.payer, 'id-lost-000000000001', '{"again":1}')
  t.same(
    await Promise.all([
      ledger.record(hosted, 'served', undefined, { release: rh }),
      ledger.record(twin, 'served', undefined, { release: rt }),
      ledger.finish(upstream.id, 'served', undefined, undefined, { release: ru }),
      ledger.record(lost, 'served', undefined, { release: rl }),
    ]),
    ['recorded', 'duplicate', true, 'recorded'],
  )
  t.same([rh.released, rt.released, ru.released, rl.released], [true, false, true, true])

  const ids = await db
    .selectFrom('payment_identifiers')
    .select(['payment_identifier', 'payment_id', 'claimed_until', 'answer_body'])
    .orderBy('payment_identifier')
    .execute()
  const byId = Object.fromEntries(ids.map((r) => [r.payment_identifier, r]))
  t.equal(byId['id-hosted-0000000001']!.claimed_until, null, 'the lease ended')
  t.equal(byId['id-hosted-0000000001']!.answer_body?.toString(), '{"ok":1}', 'with the answer kept')
  t.ok(byId['id-twin-000000000001']!.claimed_until, 'a duplicate payment releases nothing: its caller does')
  t.equal(byId['id-twin-000000000001']!.answer_body, null)
  t.equal(byId['id-upstream-00000001']!.claimed_until, null, "a record-first call's id is released with its finish")
  t.same(
    [byId['id-lost-000000000001']!.payment_id, byId['id-lost-000000000001']!.answer_body?.toString()],
    [lost.id, '{"again":1}'],
    'an id row lost since the claim is written again',
  )
})

t.test(
  'an access grant goes in its served payment’s statement: one per payer and scope, none for a duplicate',
  async (t) => {
    const db = await testDb(t)
    const ledger = createLedgerWriter(db, { maxItems: 16, maxInFlight: 1 })
    const scopeId = randomUUID()
    const a = paymentRow()
    const [a1, a2] = [paymentRow({ payer: a.payer }), paymentRow({ payer: a.payer })]
    const dup = paymentRow()
    t.equal(await ledger.record(paymentRow({ payer: dup.payer, nonce: dup.nonce })), 'recorded')
    const grant = (payer: string, minutes: number): AccessGrantWrite => ({ payer, scopeId, minutes })
    const [g1, g2, gd] = [grant(a.payer, 10), grant(a.payer, 60), grant(dup.payer, 60)]
    t.same(
      await Promise.all([
        ledger.record(a1, 'served', undefined, { grant: g1 }),
        ledger.record(a2, 'served', undefined, { grant: g2 }),
        ledger.record(dup, 'served', undefined, { grant: gd }),
      ]),
      ['recorded', 'recorded', 'duplicate'],
    )
    t.equal(g1.granted?.paymentId, a2.id, 'two grants of one payer and scope in a batch: the later payment names it')
    t.same(g1.granted, g2.granted)
    t.ok(g2.granted!.msLeft > 59 * 60_000 && g2.granted!.msLeft <= 60 * 60_000, 'the longest access wins')
    t.equal(gd.granted, undefined, 'a duplicate payment grants nothing')
    const rows = await db
      .selectFrom('access_grants')
      .select(['payer', 'payment_id'])
      .where('scope_id', '=', scopeId)
      .execute()
    t.same(rows, [{ payer: a.payer, payment_id: a2.id }])
  },
)

import { sql } from 'kysely'
import t from 'tap'
import { createDb } from '../../../src/db/create-db.js'
import { createLedgerWriter } from '../../../src/ledger/ledger-writer.js'
import { transition, voidStaleVerified } from '../../../src/ledger/transitions.js'
import { TEST_DATABASE_URL, testSchema } from '../../helpers/test-env.js'
import { paymentRow } from '../../helpers/payment-row.js'

t.test('guarded transitions on a migrated schema', async (t) => {
  const db = createDb({ databaseUrl: TEST_DATABASE_URL, schema: await testSchema(t), max: 4 })
  t.teardown(() => db.destroy())
  const ledger = createLedgerWriter(db)
  /** n new payments in `status` (served or verified), their ids */
  const payments = async (n: number, status: 'served' | 'verified') => {
    const rows = Array.from({ length: n }, () => paymentRow())
    await Promise.all(rows.map((r) => ledger.record(r, status)))
    return rows.map((r) => r.id)
  }
  const statusOf = async (ids: string[]) =>
    (await db.selectFrom('payments').select(['id', 'status']).where('id', 'in', ids).execute())
      .sort((a, b) => ids.indexOf(a.id) - ids.indexOf(b.id))
      .map((r) => r.status)

  t.test('moves only the payments in one of `from`, returns exactly those, one event each', async (t) => {
    const served = await payments(2, 'served')
    const verified = await payments(1, 'verified')
    const moved = await transition(db, [...served, ...verified], ['served'], 'settling', {
      type: 'settling',
      data: { batch: 'b1' },
    })
    t.same(moved.map((m) => m.id).sort(), [...served].sort())
    t.same(
      moved.map((m) => [m.from_status, m.scheme, m.value]),
      [
        ['served', 'exact', '1000'],
        ['served', 'exact', '1000'],
      ],
    )
    t.same(await statusOf([...served, ...verified]), ['settling', 'settling', 'verified'])
    const events = await db
      .selectFrom('payment_events')
      .select(['payment_id', 'type', 'from_status', 'to_status', 'data'])
      .where('payment_id', 'in', served)
      .where('to_status', '=', 'settling')
      .execute()
    t.equal(events.length, 2)
    t.match(events[0], { type: 'settling', from_status: 'served', to_status: 'settling', data: { batch: 'b1' } })

    const settled = await transition(db, served, ['settling'], 'settled', { txHash: '0xabc' })
    t.equal(settled.length, 2)
    const row = await db.selectFrom('payments').selectAll().where('id', '=', served[0]!).executeTakeFirstOrThrow()
    t.equal(row.tx_hash, '0xabc')
    t.ok(row.settled_at, 'settled_at set on settled')
    t.same(await transition(db, served, ['settling'], 'failed', { reason: 'late' }), [], 'settled does not move again')
  })

  t.test('a move the table does not allow throws before any SQL; nothing moves', async (t) => {
    const [id] = await payments(1, 'served')
    await t.rejects(transition(db, [id!], ['served'], 'voided'), {
      message: 'payment ledger: served → voided is not an allowed transition',
    })
    await t.rejects(transition(db, [id!], ['served', 'settled'], 'served'), /served → served|settled → served/)
    t.same(await statusOf([id!]), ['served'])
    t.same(await transition(db, [], ['settled'], 'served'), [], 'no ids: nothing to check or move')
  })

  t.test('the schema guard refuses any other status write, whoever makes it', async (t) => {
    const [id] = await payments(1, 'served')
    await t.rejects(
      sql`update payments set status = 'voided' where id = ${id}`.execute(db),
      /payment ledger: served -> voided is not an allowed transition/,
    )
    await sql`update payments set status = 'settling' where id = ${id}`.execute(db)
    await sql`update payments set status = 'settling', updated_at = now() where id = ${id}`.execute(db)
    t.same(await statusOf([id!]), ['settling'], 'an allowed move and an update that keeps the status pass')
  })

  t.test('of two concurrent movers of the same payments, each payment moves once', async (t) => {
    const ids = await payments(6, 'served')
    const [a, b] = await Promise.all([
      transition(db, ids, ['served'], 'settling'),
      transition(db, ids, ['served'], 'settling'),
    ])
    t.equal(a.length + b.length, 6)
    t.same([...a, ...b].map((m) => m.id).sort(), [...ids].sort())
    const events = await db
      .selectFrom('payment_events')
      .select('payment_id')
      .where('payment_id', 'in', ids)
      .where('to_status', '=', 'settling')
      .execute()
    t.equal(events.length, 6, 'one event a payment')
  })

  t.test('voidStaleVerified voids only verified payments older than the cut, with reason no_outcome', async (t) => {
    const [old] = await payments(1, 'verified')
    const [served] = await payments(1, 'served')
    const cut = new Date(Date.now() + 60_000)
    const [fresh] = await payments(1, 'verified')
    await sql`update payments set created_at = now() + interval '1 hour' where id = ${fresh}`.execute(db)
    const moved = (await voidStaleVerified(db, cut)).map((m) => m.id)
    t.ok(moved.includes(old!), 'the old verified payment')
    t.notOk(moved.includes(served!), 'not a served one')
    t.notOk(moved.includes(fresh!), 'not one after the cut')
    const row = await db.selectFrom('payments').selectAll().where('id', '=', old!).executeTakeFirstOrThrow()
    t.match(row, { status: 'voided', failure_reason: 'no_outcome' })
  })
})

import { randomBytes, randomUUID } from 'node:crypto'
import t from 'tap'
import { createLedgerWriter, type NewProxyPayment as NewVerifiedPayment } from '../../../src/ledger/ledger-writer.js'
import { testDeps } from '../../helpers/test-env.js'

const hex = (n: number) => `0x${randomBytes(n).toString('hex')}`
function payment(over: Partial<NewVerifiedPayment> = {}): NewVerifiedPayment {
  return {
    id: randomUUID(),
    endpoint_id: null,
    resource: 'http://127.0.0.1/tollgate/toolbox/echo',
    method: 'GET',
    x402_version: 2,
    network: 'eip155:84532',
    asset: hex(20),
    payer: hex(20),
    pay_to: hex(20),
    value: 1000n,
    valid_after: 0n,
    valid_before: 1_900_000_000n,
    nonce: hex(32),
    signature: hex(65),
    settlement_mode: 'async',
    ...over,
  }
}

t.test('records and outcomes share one writer; every row, event and guard is right', async (t) => {
  const deps = await testDeps(t)
  const ledger = createLedgerWriter(deps.db)
  const rows = Array.from({ length: 40 }, (_, i) =>
    payment({ value: BigInt(1000 + i), settlement_mode: i % 2 ? 'sync' : 'async', x402_version: i % 2 ? 1 : 2 }),
  )
  const dup = { ...payment(), payer: rows[0]!.payer, nonce: rows[0]!.nonce }
  const recorded = await Promise.all([...rows.map((r) => ledger.record(r)), ledger.record(dup)])
  t.same(
    recorded,
    [...rows.map(() => 'recorded'), 'duplicate'],
    'a second (payer, nonce) is refused, the batch survives',
  )

  // outcomes and new records in flight together
  const late = payment()
  const [served, voided, again, lateRecorded] = await Promise.all([
    ledger.finish(rows[0]!.id, 'served'),
    ledger.finish(rows[1]!.id, 'voided', 'handler_failed'),
    ledger.finish(rows[2]!.id, 'served'),
    ledger.record(late),
  ])
  t.same([served, voided, again, lateRecorded], [true, true, true, 'recorded'])
  t.equal(await ledger.finish(rows[0]!.id, 'voided', 'late'), false, 'guarded: a served payment does not move again')
  t.equal(await ledger.finish(randomUUID(), 'served'), false, 'unknown id: nothing moves')

  const stored = await deps.db
    .selectFrom('payments')
    .selectAll()
    .where(
      'id',
      'in',
      rows.map((r) => r.id),
    )
    .orderBy('value')
    .execute()
  t.equal(stored.length, 40)
  for (const [i, s] of stored.entries()) {
    const r = rows[i]!
    t.same(
      {
        payer: s.payer,
        nonce: s.nonce,
        value: s.value,
        sig: s.signature,
        mode: s.settlement_mode,
        v: s.x402_version,
        endpoint: s.endpoint_id,
        after: s.valid_after,
        before: s.valid_before,
      },
      {
        payer: r.payer,
        nonce: r.nonce,
        value: String(r.value),
        sig: r.signature,
        mode: r.settlement_mode,
        v: r.x402_version,
        endpoint: null,
        after: '0',
        before: '1900000000',
      },
    )
  }
  t.same(
    stored.slice(0, 3).map((s) => [s.status, s.failure_reason]),
    [
      ['served', null],
      ['voided', 'handler_failed'],
      ['served', null],
    ],
  )
  t.ok(stored.slice(3).every((s) => s.status === 'verified' && s.tx_hash === null))

  const events = await deps.db
    .selectFrom('payment_events')
    .select(['payment_id', 'type', 'from_status', 'to_status', 'reason'])
    .where('payment_id', '=', rows[1]!.id)
    .orderBy('id')
    .execute()
  t.same(
    events.map((e) => [e.type, e.from_status, e.to_status, e.reason]),
    [
      ['verified', null, 'verified', null],
      ['voided', 'verified', 'voided', 'handler_failed'],
    ],
  )
  const counts = await deps.db
    .selectFrom('payment_events')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .executeTakeFirstOrThrow()
  t.equal(Number(counts.n), 41 + 3, 'one verified event per new payment, one per transition; none for refused writes')
})

t.test('a database error rejects the writes of that batch and the writer keeps working', async (t) => {
  const deps = await testDeps(t)
  const ledger = createLedgerWriter(deps.db)
  await t.rejects(ledger.record(payment({ value: -1n })), 'the value check constraint fails the statement')
  t.equal(await ledger.record(payment()), 'recorded')
})

t.test('an endpoint deleted while its calls are in flight fails nobody: its payments keep its id', async (t) => {
  const deps = await testDeps(t)
  const ledger = createLedgerWriter(deps.db)
  const seller = await deps.db
    .insertInto('sellers')
    .values({ namespace: 'gone', display_name: 'gone' })
    .returning('id')
    .executeTakeFirstOrThrow()
  const service = await deps.db
    .insertInto('services')
    .values({ seller_id: seller.id, name: 'svc', display_name: 'svc', pay_to: hex(20) })
    .returning('id')
    .executeTakeFirstOrThrow()
  const [kept, deleted] = await Promise.all(
    ['kept', 'deleted'].map((slug) =>
      deps.db
        .insertInto('endpoints')
        .values({ service_id: service.id, slug, methods: ['GET'], price: '1000', handler: 'echo' })
        .returning('id')
        .executeTakeFirstOrThrow(),
    ),
  )
  const before = payment({ endpoint_id: deleted!.id })
  t.equal(await ledger.record(before), 'recorded')

  // the seller unpublishes; the proxy's table still had the endpoint when these calls were verified
  await deps.db.deleteFrom('endpoints').where('id', '=', deleted!.id).execute()
  const batch = [payment({ endpoint_id: deleted!.id }), payment({ endpoint_id: kept!.id }), payment()]
  t.same(
    await Promise.all(batch.map((p) => ledger.record(p))),
    ['recorded', 'recorded', 'recorded'],
    'the batch holding the late call is written whole',
  )
  t.equal(
    await ledger.finish(before.id, 'served'),
    true,
    'an earlier payment of the deleted endpoint is still served and settled',
  )

  const rows = await deps.db
    .selectFrom('payments')
    .select(['id', 'endpoint_id', 'status'])
    .where('id', 'in', [before.id, ...batch.map((p) => p.id)])
    .execute()
  const byId = new Map(rows.map((r) => [r.id, r]))
  t.same(
    byId.get(before.id),
    { id: before.id, endpoint_id: deleted!.id, status: 'served' },
    'deleting the endpoint did not touch its payments',
  )
  t.equal(byId.get(batch[0]!.id)?.endpoint_id, deleted!.id)
  t.equal(byId.get(batch[1]!.id)?.endpoint_id, kept!.id)
})

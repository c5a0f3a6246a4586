import { randomUUID } from 'node:crypto'
import { sql } from 'kysely'
import t from 'tap'
import type { Deps } from '../../../src/deps.js'
import { TRANSACTION_COLUMNS, EVENT_COLUMNS } from '../../../src/services/accounts/history-export.js'
import { accountsApp, userWithKey } from '../../helpers/accounts.js'

/** RFC 4180 parser for the test: quoted fields, doubled quotes, CRLF. */
function parseCsv(text: string): string[][] {
  const rows: string[][] = []
  let row: string[] = []
  let field = ''
  let q = false
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!
    if (q) {
      if (c === '"' && text[i + 1] === '"') {
        field += '"'
        i++
      } else if (c === '"') q = false
      else field += c
    } else if (c === '"') q = true
    else if (c === ',') {
      row.push(field)
      field = ''
    } else if (c === '\r' && text[i + 1] === '\n') {
      row.push(field)
      rows.push(row)
      row = []
      field = ''
      i++
    } else field += c
  }
  return rows
}

async function seed(deps: Deps, payer: string, n: number, extra: Partial<Record<string, string>> = {}) {
  const ids: string[] = []
  for (let i = 0; i < n; i++) {
    const id = randomUUID()
    ids.push(id)
    await deps.db
      .insertInto('payments')
      .values({
        id,
        resource: extra.resource ?? `https://proxy/x/y/z?i=${i}`,
        method: 'GET',
        x402_version: 2,
        network: 'eip155:84532',
        asset: '0x036CbD53842c5426634e7929541eC2318f3dCF7e',
        payer,
        pay_to: '0x' + '22'.repeat(20),
        value: String(1000 * (i + 1)),
        valid_after: 0,
        valid_before: 2_000_000_000,
        nonce: '0x' + i.toString(16).padStart(64, '0'),
        signature: '0xsig',
        status: i % 2 ? 'settled' : 'served',
        tx_hash: i % 2 ? '0x' + 'ab'.repeat(32) : null,
        failure_reason: extra.failure_reason ?? null,
        created_at: new Date(Date.UTC(2026, 10, 1, 0, 0, i)),
      })
      .execute()
    await deps.db
      .insertInto('payment_events')
      .values({
        payment_id: id,
        type: 'status',
        from_status: null,
        to_status: 'served',
        reason: null,
        data: JSON.stringify({ i, note: 'a "quoted", thing' }),
      })
      .execute()
  }
  return ids
}

t.test('pages, filters and CSV / NDJSON exports match the database', async (t) => {
  const { deps, app } = await accountsApp(t)
  const { auth } = await userWithKey(deps)
  const other = await userWithKey(deps)
  const a1 = (await app.inject({ method: 'POST', url: '/v1/agents', headers: auth, payload: { name: 'a1' } })).json()
    .address
  const a2 = (await app.inject({ method: 'POST', url: '/v1/agents', headers: auth, payload: { name: 'a2' } })).json()
    .address
  const foreign = (
    await app.inject({ method: 'POST', url: '/v1/agents', headers: other.auth, payload: { name: 'x' } })
  ).json().address
  await seed(deps, a1, 5, { failure_reason: 'line\nbreak, and "quotes"' })
  await seed(deps, a2.toLowerCase(), 3)
  await seed(deps, foreign, 4)

  const all = await deps.db
    .selectFrom('payments')
    .select([
      'id',
      'payer',
      'value',
      'status',
      'tx_hash',
      'failure_reason',
      'resource',
      sql<string>`(extract(epoch from created_at) * 1000000)::bigint::text`.as('micros'),
    ])
    .where(sql<boolean>`lower(payer) in (${sql.join([a1.toLowerCase(), a2.toLowerCase()])})`)
    .orderBy('created_at')
    .orderBy('id')
    .execute()
  t.equal(all.length, 8)
  const micros = (iso: string) =>
    (BigInt(Date.parse(iso.slice(0, 23) + 'Z')) * 1000n + BigInt(iso.slice(23, 26))).toString()

  // pages
  const seen: string[] = []
  let cursor: string | null = null
  do {
    const page: { data: Array<{ id: string }>; has_more: boolean; next_cursor: string | null } = (
      await app.inject({
        method: 'GET',
        url: `/v1/transactions?limit=3${cursor ? `&cursor=${cursor}` : ''}`,
        headers: auth,
      })
    ).json()
    seen.push(...page.data.map((p) => p.id))
    cursor = page.next_cursor
  } while (cursor)
  t.same(
    seen,
    all.map((r) => r.id),
    'cursor pages walk every transaction once, in order',
  )
  const byAgent = await app.inject({ method: 'GET', url: `/v1/transactions?agent=${a2.toLowerCase()}`, headers: auth })
  t.equal(byAgent.json().data.length, 3)
  const ranged = await app.inject({
    method: 'GET',
    url: `/v1/transactions?from=2026-11-01T00:00:01Z&to=2026-11-01T00:00:03Z`,
    headers: auth,
  })
  t.equal(ranged.json().data.length, 4, 'from inclusive, to exclusive (two agents, seconds 1 and 2)')
  for (const [q, param] of [
    ['agent=0x12', 'agent'],
    ['from=yesterday', 'from'],
    ['cursor=zzz', 'cursor'],
    ['limit=1000', 'limit'],
  ]) {
    const res = await app.inject({ method: 'GET', url: `/v1/transactions?${q}`, headers: auth })
    t.equal(res.statusCode, 400, q)
    t.equal(res.json().param, param)
  }

  // NDJSON
  const nd = await app.inject({ method: 'GET', url: '/v1/transactions?format=ndjson', headers: auth })
  t.equal(nd.statusCode, 200)
  t.match(nd.headers['content-type'], /application\/x-ndjson/)
  const lines = nd.body
    .trimEnd()
    .split('\n')
    .map((l) => JSON.parse(l))
  t.equal(lines.length, all.length)
  lines.forEach((l, i) => {
    const r = all[i]!
    t.same(
      {
        id: l.id,
        payer: l.payer,
        value: l.value,
        status: l.status,
        tx_hash: l.tx_hash,
        failure_reason: l.failure_reason,
        resource: l.resource,
        micros: micros(l.created_at),
      },
      r,
      `ndjson row ${i}`,
    )
  })

  // CSV
  const csv = await app.inject({ method: 'GET', url: '/v1/transactions?format=csv', headers: auth })
  t.match(csv.headers['content-type'], /text\/csv/)
  t.match(csv.headers['content-disposition'], /attachment; filename="transactions-.*\.csv"/)
  const rows = parseCsv(csv.body)
  t.same(rows[0], [...TRANSACTION_COLUMNS])
  t.equal(rows.length - 1, all.length)
  rows.slice(1).forEach((cells, i) => {
    const o = Object.fromEntries(TRANSACTION_COLUMNS.map((c, j) => [c, cells[j]]))
    const r = all[i]!
    t.same(
      {
        id: o.id,
        payer: o.payer,
        value: o.value,
        status: o.status,
        tx_hash: o.tx_hash || null,
        failure_reason: o.failure_reason || null,
        resource: o.resource,
        micros: micros(o.created_at!),
      },
      r,
      `csv row ${i}`,
    )
  })

  // payment events
  const ev = await app.inject({ method: 'GET', url: '/v1/payment-events?format=csv', headers: auth })
  const evRows = parseCsv(ev.body)
  t.same(evRows[0], [...EVENT_COLUMNS])
  t.equal(evRows.length - 1, 8, "only the user's payments' events")
  t.same(JSON.parse(evRows[1]![EVENT_COLUMNS.indexOf('data')]!), { i: 0, note: 'a "quoted", thing' })
  const evNd = await app.inject({ method: 'GET', url: `/v1/payment-events?format=ndjson&agent=${a1}`, headers: auth })
  t.equal(evNd.body.trimEnd().split('\n').length, 5)
  const evPage = await app.inject({ method: 'GET', url: '/v1/payment-events?limit=2', headers: auth })
  t.match(evPage.json(), { object: 'list', has_more: true, data: [{ object: 'payment_event', type: 'status' }, {}] })
})

t.test(
  'a deferred call shows its voucher (id, nonce, valueAggregate) and the collection that settled it',
  async (t) => {
    const { deps, app } = await accountsApp(t)
    const { auth } = await userWithKey(deps)
    const agent = (
      (
        await app.inject({ method: 'POST', url: '/v1/agents', headers: auth, payload: { name: 'voucher-buyer' } })
      ).json().address as string
    ).toLowerCase()
    const [exactId] = await seed(deps, agent, 1)
    const digest = `0x${'d1'.repeat(32)}`
    const voucherId = `0x${'1d'.repeat(32)}`
    const collection = `0x${'c0'.repeat(32)}`
    const seller = '0x' + '22'.repeat(20)
    const asset = '0x036cbd53842c5426634e7929541ec2318f3dcf7e'
    const deferredId = randomUUID()
    await deps.db
      .insertInto('payments')
      .values({
        id: deferredId,
        resource: 'https://proxy/x/y/deferred',
        method: 'GET',
        x402_version: 2,
        scheme: 'deferred',
        network: 'eip155:84532',
        asset,
        payer: agent,
        pay_to: seller,
        value: '1000',
        valid_after: 1_795_000_000,
        valid_before: 253_402_300_799,
        nonce: digest,
        signature: '0xsig',
        status: 'settled',
        tx_hash: collection,
        created_at: new Date(Date.UTC(2026, 10, 2)),
      })
      .execute()
    await deps.db
      .insertInto('deferred_vouchers')
      .values({
        escrow: '0xdefe55ed00000000000000000000000000000402',
        buyer: agent,
        seller,
        asset,
        voucher_id: voucherId,
        nonce: 4n,
        value_aggregate: 5000n,
        timestamp: 1_795_000_000n,
        signature: '0xsig',
        digest,
        collected: 5000n,
      })
      .execute()
    const expected = {
      voucher_id: voucherId,
      voucher_nonce: '4',
      voucher_value_aggregate: '5000',
      tx_hash: collection,
      scheme: 'deferred',
    }

    const page = (await app.inject({ method: 'GET', url: '/v1/transactions', headers: auth })).json().data as Array<
      Record<string, unknown>
    >
    t.match(
      page.find((r) => r.id === deferredId),
      expected,
      'the JSON page',
    )
    t.match(
      page.find((r) => r.id === exactId),
      { voucher_id: null, voucher_nonce: null, voucher_value_aggregate: null },
      'an exact call has no voucher',
    )
    const nd = (await app.inject({ method: 'GET', url: '/v1/transactions?format=ndjson', headers: auth })).body
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l))
    t.match(
      nd.find((r) => r.id === deferredId),
      expected,
      'the NDJSON export',
    )
    const csv = parseCsv((await app.inject({ method: 'GET', url: '/v1/transactions?format=csv', headers: auth })).body)
    const rows = csv.slice(1).map((cells) => Object.fromEntries(TRANSACTION_COLUMNS.map((c, j) => [c, cells[j]])))
    t.match(
      rows.find((r) => r.id === deferredId),
      expected,
      'the CSV export',
    )
    t.match(
      rows.find((r) => r.id === exactId),
      { voucher_id: '', voucher_nonce: '' },
      'empty cells for exact',
    )
  },
)

import { randomUUID } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import { Kysely, PostgresDialect, sql, type CompiledQuery } from 'kysely'
import pg from 'pg'
import t from 'tap'
import type { Database } from '../../../src/db/database.js'
import type { Deps } from '../../../src/deps.js'
import { createHistory, type HistoryKind } from '../../../src/services/accounts/history-export.js'
import { accountsApp, userWithKey } from '../../helpers/accounts.js'

interface Tx {
  id: string
  at: number
  payer: string
  seller: boolean
}
interface Ev {
  id: string
  at: number
  payment: Tx
}
interface Page {
  data: Array<{ id: string; created_at: string }>
  has_more: boolean
  next_cursor: string | null
}

const BASE = Date.UTC(2026, 10, 1)
const at = (second: number) => BASE + second * 1000
const iso = (ms: number) => new Date(ms).toISOString()

// (created_at, id) in JS, independent of the SQL under test: uuids compare as lower-case hex text
// (the dashes sit at the same places), event ids as integers.
const byTx = (a: Tx, b: Tx) => a.at - b.at || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)
const byEv = (a: Ev, b: Ev) => a.at - b.at || Number(BigInt(a.id) - BigInt(b.id))

const decode = (cursor: string) => JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown[]

/**
 * A user with two agents and a seller endpoint, and payments to and from them three to a second
 * (ties on created_at everywhere), plus payments of another user that must never show.
 */
async function history(t: { teardown(fn: () => unknown): void }) {
  const { deps, app } = await accountsApp(t)
  const { auth } = await userWithKey(deps)
  const other = await userWithKey(deps)
  const agent = async (a: { authorization: string }, name: string) =>
    (
      (await app.inject({ method: 'POST', url: '/v1/agents', headers: a, payload: { name } })).json().address as string
    ).toLowerCase()
  const a1 = await agent(auth, 'a1')
  const a2 = await agent(auth, 'a2')
  const foreign = await agent(other.auth, 'x')
  const outsider = '0x' + '33'.repeat(20) // a buyer who is nobody's agent here, paying the user's endpoint
  if (
    (await app.inject({ method: 'POST', url: '/v1/sellers', headers: auth, payload: { namespace: 'hist-seller' } }))
      .statusCode !== 201
  )
    throw new Error('seller')
  if (
    (
      await app.inject({
        method: 'POST',
        url: '/v1/sellers/hist-seller/services',
        headers: auth,
        payload: { name: 'svc', pay_to: '0x' + '22'.repeat(20) },
      })
    ).statusCode !== 201
  )
    throw new Error('service')
  const ep = await app.inject({
    method: 'POST',
    url: '/v1/sellers/hist-seller/services/svc/endpoints',
    headers: auth,
    payload: { slug: 'ep-one', price: '1000', handler: 'hash-generator' },
  })
  if (ep.statusCode !== 201) throw new Error(`endpoint: ${ep.body}`)
  const endpointId = (
    await deps.db.selectFrom('endpoints').select('id').where('slug', '=', 'ep-one').executeTakeFirstOrThrow()
  ).id

  const txs: Tx[] = []
  const events: Ev[] = []
  const insert = async (payer: string, second: number, seller: boolean, nEvents: number, theirs = false) => {
    const tx: Tx = { id: randomUUID(), at: at(second), payer, seller }
    await deps.db
      .insertInto('payments')
      .values({
        id: tx.id,
        endpoint_id: seller ? endpointId : null,
        resource: `https://proxy/hist-seller/svc/ep-one?s=${second}`,
        method: 'GET',
        x402_version: 2,
        network: 'eip155:84532',
        asset: '0x036CbD53842c5426634e7929541eC2318f3dCF7e',
        payer,
        pay_to: '0x' + '22'.repeat(20),
        value: '1000',
        valid_after: 0,
        valid_before: 2_000_000_000,
        nonce: '0x' + randomUUID().replace(/-/g, '').padStart(64, '0'),
        signature: '0xsig',
        status: 'served',
        created_at: new Date(tx.at),
      })
      .execute()
    for (let k = 0; k < nEvents; k++) {
      const { id } = await deps.db
        .insertInto('payment_events')
        .values({
          payment_id: tx.id,
          type: 'status',
          from_status: null,
          to_status: 'served',
          reason: null,
          data: JSON.stringify({ k }),
          created_at: new Date(tx.at),
        })
        .returning(sql<string>`id::text`.as('id'))
        .executeTakeFirstOrThrow()
      if (!theirs) events.push({ id, at: tx.at, payment: tx })
    }
    return tx
  }
  for (let i = 0; i < 23; i++) {
    const seller = i % 5 === 4
    // Inserted in an order unrelated to the ids, so only the id tie-break can give the expected order.
    txs.push(await insert(seller ? outsider : i % 2 ? a1 : a2, Math.floor(i / 3), seller, 1 + (i % 2)))
    if (i % 4 === 0) await insert(foreign, Math.floor(i / 3), false, 1, true)
  }
  txs.sort(byTx)
  events.sort(byEv)
  return { deps, app, auth, a1, a2, txs, events }
}

/** Follows next_cursor from the first page to the last; every page's size and the page count are checked. */
async function walk(
  t: { ok(v: unknown, message: string): unknown },
  app: FastifyInstance,
  auth: { authorization: string },
  url: string,
  limit: number,
) {
  const ids: string[] = []
  const pages: Page[] = []
  let cursor: string | null = null
  do {
    const res = await app.inject({
      method: 'GET',
      url: `${url}${url.includes('?') ? '&' : '?'}limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`,
      headers: auth,
    })
    if (res.statusCode !== 200) throw new Error(`${url}: ${res.statusCode} ${res.body}`)
    const page = res.json() as Page
    pages.push(page)
    ids.push(...page.data.map((r) => r.id))
    t.ok(page.data.length <= limit, `page ${pages.length} holds at most ${limit}`)
    cursor = page.next_cursor
    if (pages.length > 200) throw new Error('too many pages')
  } while (cursor)
  return { ids, pages }
}

t.test('order=desc: pages walk everything newest first, each row once, ties on created_at broken by id', async (t) => {
  const { app, auth, txs, events } = await history(t)
  const newest = [...txs].reverse()
  t.equal(txs.length, 23)
  for (const limit of [1, 4, 100]) {
    const { ids, pages } = await walk(t, app, auth, '/v1/transactions?order=desc', limit)
    t.same(
      ids,
      newest.map((r) => r.id),
      `limit ${limit}: every transaction once, newest first`,
    )
    t.equal(pages.length, Math.ceil(txs.length / limit), `limit ${limit}: no empty last page`)
    t.equal(pages.at(-1)!.has_more, false)
  }
  // the fixture does what the test needs: a page boundary inside a group of rows with one created_at
  const { pages } = await walk(t, app, auth, '/v1/transactions?order=desc', 4)
  t.equal(
    pages[0]!.data[3]!.created_at.slice(0, 19),
    pages[1]!.data[0]!.created_at.slice(0, 19),
    'pages 1 and 2 split rows of the same second',
  )
  t.same(decode(pages[0]!.next_cursor!).at(-1), 'desc', 'a desc cursor says so')

  const evNewest = [...events].reverse()
  t.ok(evNewest.length > txs.length, 'some payments have two events')
  for (const limit of [1, 5]) {
    const { ids } = await walk(t, app, auth, '/v1/payment-events?order=desc', limit)
    t.same(
      ids,
      evNewest.map((e) => e.id),
      `limit ${limit}: every payment event once, newest first`,
    )
  }
})

t.test(
  'asc (the default) is unchanged: same pages, same two-part cursors; cursors issued before order existed still work',
  async (t) => {
    const { app, auth, txs, events } = await history(t)
    const plain = await walk(t, app, auth, '/v1/transactions', 4)
    t.same(
      plain.ids,
      txs.map((r) => r.id),
      'oldest first',
    )
    const explicit = await walk(t, app, auth, '/v1/transactions?order=asc', 4)
    t.same(explicit.pages, plain.pages, 'order=asc gives the same pages and cursors as no order')
    for (const p of plain.pages.slice(0, -1))
      t.equal(decode(p.next_cursor!).length, 2, 'an asc cursor is [created_at, id], as before')
    t.same(
      (await walk(t, app, auth, '/v1/payment-events', 5)).ids,
      events.map((e) => e.id),
      'events oldest first',
    )

    // a cursor as the code before `order` made it: [created_at with microseconds, id]
    const fifth = txs[4]!
    const old = Buffer.from(JSON.stringify([`${iso(fifth.at).slice(0, 19)}.000000Z`, fifth.id])).toString('base64url')
    for (const q of ['', '&order=asc']) {
      const res = await app.inject({ method: 'GET', url: `/v1/transactions?limit=3&cursor=${old}${q}`, headers: auth })
      t.equal(res.statusCode, 200, `an old cursor${q}`)
      t.same(
        res.json().data.map((r: { id: string }) => r.id),
        txs.slice(5, 8).map((r) => r.id),
        'continues right after its row',
      )
    }
  },
)

t.test('a cursor only continues its own order: 400 on cursor otherwise', async (t) => {
  const { app, auth } = await history(t)
  for (const path of ['/v1/transactions', '/v1/payment-events']) {
    const desc = (await app.inject({ method: 'GET', url: `${path}?order=desc&limit=2`, headers: auth })).json()
      .next_cursor as string
    const asc = (await app.inject({ method: 'GET', url: `${path}?limit=2`, headers: auth })).json()
      .next_cursor as string
    t.ok(desc && asc)
    for (const [q, cursorOrder] of [
      [`cursor=${desc}&order=asc`, 'desc'],
      [`cursor=${desc}`, 'desc'],
      [`cursor=${asc}&order=desc`, 'asc'],
      [`cursor=${desc}&order=asc&format=ndjson`, 'desc'],
      [`cursor=${asc}&order=desc&format=csv`, 'asc'],
    ]) {
      const res = await app.inject({ method: 'GET', url: `${path}?${q}`, headers: auth })
      t.equal(res.statusCode, 400, `${path} ${q}`)
      t.match(res.json(), {
        code: 'invalid_parameter',
        param: 'cursor',
        message: `invalid value for cursor: this cursor is for order=${cursorOrder}`,
      })
    }
    t.equal(
      (await app.inject({ method: 'GET', url: `${path}?cursor=${desc}&order=desc`, headers: auth })).statusCode,
      200,
      'the same order goes on',
    )
  }
  // only 'desc' may follow [created_at, id]
  const [createdAt, id] = decode(
    (await app.inject({ method: 'GET', url: '/v1/transactions?order=desc&limit=2', headers: auth })).json().next_cursor,
  )
  for (const parts of [
    [createdAt, id, 'asc'],
    [createdAt, id, 'sideways'],
    [createdAt, id, 'desc', 'x'],
    [createdAt],
    { at: createdAt, id },
  ]) {
    const forged = Buffer.from(JSON.stringify(parts)).toString('base64url')
    for (const order of ['asc', 'desc']) {
      const res = await app.inject({
        method: 'GET',
        url: `/v1/transactions?order=${order}&cursor=${forged}`,
        headers: auth,
      })
      t.match(
        res.json(),
        { statusCode: 400, param: 'cursor', message: 'invalid value for cursor: not a cursor returned by this list' },
        `${JSON.stringify(parts)} with ${order}`,
      )
    }
  }
})

t.test('order other than asc or desc: 400 naming order and its values', async (t) => {
  const { app, auth } = await history(t)
  for (const path of ['/v1/transactions', '/v1/payment-events']) {
    for (const q of ['order=newest', 'order=DESC', 'order=', 'order=ascending&format=csv', 'order=desc&order=asc']) {
      const url = `${path}?${q}`
      const res = await app.inject({ method: 'GET', url, headers: auth })
      t.equal(res.statusCode, 400, url)
      t.equal(res.json().code, 'invalid_parameter')
      t.equal(res.json().param, 'order', url)
      if (!q.includes('&order=')) t.equal(res.json().message, 'invalid value for order: expected one of asc, desc', url)
    }
  }
  // documented in OpenAPI with its values and default
  const doc = (await app.inject({ method: 'GET', url: '/docs/json' })).json()
  for (const path of ['/v1/transactions', '/v1/payment-events']) {
    const param = doc.paths[path].get.parameters.find(
      (p: { in: string; name: string }) => p.in === 'query' && p.name === 'order',
    )
    t.match(param, { schema: { type: 'string', enum: ['asc', 'desc'], default: 'asc' } }, `${path}: order in OpenAPI`)
  }
  // the other enums of these routes name their values too
  t.match((await app.inject({ method: 'GET', url: '/v1/transactions?role=both', headers: auth })).json(), {
    param: 'role',
    message: 'invalid value for role: expected one of buyer, seller',
  })
  t.match((await app.inject({ method: 'GET', url: '/v1/transactions?limit=0', headers: auth })).json(), {
    statusCode: 400,
    param: 'limit',
    message: 'invalid value for limit: must be >= 1',
  })
})

t.test('filters apply with order=desc: from/to, agent, role, and their combination', async (t) => {
  const { app, auth, a1, a2, txs, events } = await history(t)
  const from = at(2)
  const to = at(6)
  const cases: Array<[string, (r: Tx) => boolean]> = [
    [`from=${iso(from)}`, (r) => r.at >= from],
    [`to=${iso(to)}`, (r) => r.at < to],
    [`from=${iso(from)}&to=${iso(to)}`, (r) => r.at >= from && r.at < to],
    [`agent=${a1}`, (r) => r.payer === a1],
    ['role=buyer', (r) => !r.seller],
    ['role=seller', (r) => r.seller],
    [`role=buyer&agent=${a2}&from=${iso(from)}`, (r) => !r.seller && r.payer === a2 && r.at >= from],
  ]
  for (const [q, keep] of cases) {
    const want = txs.filter(keep)
    t.ok(want.length > 1 && want.length < txs.length, `${q}: the filter keeps some rows, not all`)
    t.same(
      (await walk(t, app, auth, `/v1/transactions?order=desc&${q}`, 2)).ids,
      [...want].reverse().map((r) => r.id),
      `transactions ${q}, newest first`,
    )
    const evWant = events.filter((e) => keep(e.payment))
    t.same(
      (await walk(t, app, auth, `/v1/payment-events?order=desc&${q}`, 3)).ids,
      [...evWant].reverse().map((e) => e.id),
      `payment events ${q}, newest first`,
    )
  }
})

t.test('CSV and NDJSON exports follow order too', async (t) => {
  const { app, auth, txs, events } = await history(t)
  const ndIds = async (url: string) =>
    (await app.inject({ method: 'GET', url, headers: auth })).body
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l).id as string)
  const csvIds = async (url: string) =>
    (await app.inject({ method: 'GET', url, headers: auth })).body
      .trimEnd()
      .split('\r\n')
      .slice(1)
      .map((l) => l.split(',')[0])
  t.same(
    await ndIds('/v1/transactions?format=ndjson&order=desc'),
    [...txs].reverse().map((r) => r.id),
    'NDJSON newest first',
  )
  t.same(
    await csvIds('/v1/transactions?format=csv&order=desc'),
    [...txs].reverse().map((r) => r.id),
    'CSV newest first',
  )
  t.same(
    await ndIds('/v1/payment-events?format=ndjson&order=desc'),
    [...events].reverse().map((e) => e.id),
    'events NDJSON newest first',
  )
  t.same(
    await ndIds('/v1/transactions?format=ndjson'),
    txs.map((r) => r.id),
    'default still oldest first',
  )
  // an export resumed from a desc page's cursor goes on newest first from there
  const first = (
    await app.inject({ method: 'GET', url: '/v1/transactions?order=desc&limit=5', headers: auth })
  ).json() as Page
  t.same(
    await ndIds(`/v1/transactions?format=ndjson&order=desc&cursor=${first.next_cursor}`),
    [...txs]
      .reverse()
      .slice(5)
      .map((r) => r.id),
    'resumed after the page',
  )
})

/** The SQL a page runs (after the look-up of the user's agents and endpoints), captured from a Kysely logger around the real service. */
async function pageSql(
  t: { teardown(fn: () => unknown): void },
  deps: Deps,
  kind: HistoryKind,
  userId: string,
  order: 'asc' | 'desc',
  cursor?: string,
) {
  const pool = new pg.Pool({
    connectionString: deps.config.databaseUrl,
    options: `-c search_path=${deps.config.databaseSchema}`,
    max: 1,
  })
  const seen: CompiledQuery[] = []
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }), log: (e) => void seen.push(e.query) })
  t.teardown(() => db.destroy())
  const page = await createHistory({
    db,
    databaseUrl: deps.config.databaseUrl,
    databaseSchema: deps.config.databaseSchema,
  }).page(kind, userId, { order, cursor }, 20)
  return { query: seen.at(-1)!, page, pool }
}

interface PlanNode {
  'Node Type': string
  'Index Name'?: string
  'Scan Direction'?: string
  'Actual Rows'?: number
  Plans?: PlanNode[]
}
const nodes = (n: PlanNode): PlanNode[] => [n, ...(n.Plans ?? []).flatMap(nodes)]

t.test('EXPLAIN: a desc page reads its index backwards, like asc forwards, and sorts at most a page', async (t) => {
  const { deps } = await accountsApp(t)
  const { userId } = await userWithKey(deps)
  const mine = '0x' + '44'.repeat(20)
  await sql`insert into agents (user_id, name, address, encrypted_key) values (${userId}, 'bulk', ${mine}, 'unused')`.execute(
    deps.db,
  )
  // 20,000 payments (a third of them the user's), three to a second, one event each
  await sql`insert into payments (id, resource, method, x402_version, network, asset, payer, pay_to, value, valid_after, valid_before, nonce, signature, status, created_at)
    select gen_random_uuid(), 'r', 'GET', 2, 'eip155:84532', 'a', case when g % 3 = 0 then ${mine} else '0x' || lpad(to_hex(g), 40, '0') end, 'p', 1000, 0, 1, md5(g::text), 's', 'served',
      timestamptz '2026-11-01' + (g / 3) * interval '1 second'
    from generate_series(1, 20000) g`.execute(deps.db)
  await sql`insert into payment_events (payment_id, type, to_status, created_at) select id, 'status', 'served', created_at from payments`.execute(
    deps.db,
  )
  await sql`analyze payments`.execute(deps.db)
  await sql`analyze payment_events`.execute(deps.db)

  // transactions: the agent's payments in order from (lower(payer), created_at, id), one page of them;
  // events of a user who holds a third of all payments: the planner walks the event log in order
  for (const [kind, index] of [
    ['transactions', 'payments_payer_lower_created_idx'],
    ['payment_events', 'payment_events_created_idx'],
  ] as const) {
    for (const order of ['asc', 'desc'] as const) {
      const first = await pageSql(t, deps, kind, userId, order)
      t.equal(first.page.data.length, 20)
      const next = await pageSql(t, deps, kind, userId, order, first.page.next_cursor!)
      for (const [label, { query, pool }] of [
        ['first page', first],
        ['next page', next],
      ] as const) {
        const { rows } = await pool.query(`explain (analyze, format json) ${query.sql}`, query.parameters as unknown[])
        const plan = nodes((rows[0]['QUERY PLAN'] as Array<{ Plan: PlanNode }>)[0]!.Plan)
        // payments and payment_events are partitioned by day: each partition's copy of the index
        const copy = new RegExp(
          `^${index.startsWith('payment_events') ? 'payment_events' : 'payments'}_(p\\d{8}|default)_${index.startsWith('payment_events') ? 'created_at_id_idx' : 'lower_created_at_id_idx'}$`,
        )
        const scan = plan.find((n) => n['Index Name'] === index || copy.test(n['Index Name'] ?? ''))
        t.ok(scan, `${kind} ${order} ${label}: scans ${index}`)
        t.equal(
          scan?.['Scan Direction'],
          order === 'desc' ? 'Backward' : 'Forward',
          `${kind} ${order} ${label}: ${order === 'desc' ? 'backwards' : 'forwards'}`,
        )
        // the page's rows come out of the index in order; at most a page (limit + 1) is sorted again
        const sorted = plan
          .filter((n) => /Sort/.test(n['Node Type']))
          .map((n) => n.Plans?.[0]?.['Actual Rows'] ?? Infinity)
        t.ok(
          sorted.every((r) => r <= 21),
          `${kind} ${order} ${label}: sorts at most a page (${sorted.join(', ') || 'no sort'})`,
        )
      }
    }
  }
})

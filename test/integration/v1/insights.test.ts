import { Kysely, PostgresDialect, sql, type CompiledQuery } from 'kysely'
import pg from 'pg'
import t from 'tap'
import type { Database } from '../../../src/db/database.js'
import { insights, insightsRange } from '../../../src/services/insights/insights.js'
import { accountsApp, userWithKey } from '../../helpers/accounts.js'

interface PlanNode {
  'Node Type': string
  'Relation Name'?: string
  'Index Name'?: string
  Plans?: PlanNode[]
}
const nodes = (n: PlanNode): PlanNode[] => [n, ...(n.Plans ?? []).flatMap(nodes)]

const columns = sql`id, endpoint_id, resource, method, x402_version, network, asset, payer, pay_to, value, valid_after, valid_before, nonce, signature, status, created_at, settled_at`

t.test(
  'GET /v1/insights: spend per agent, revenue and calls per endpoint, failures and settlement delay, per UTC day',
  async (t) => {
    const { deps, app } = await accountsApp(t)
    const u = await userWithKey(deps)
    const other = await userWithKey(deps)
    const a1 = '0xAaAa000000000000000000000000000000000001'
    const a2 = '0xaaaa000000000000000000000000000000000002'
    // two statements: agents are listed oldest first
    const alphaId = (
      await sql<{
        id: string
      }>`insert into agents (user_id, name, address, encrypted_key) values (${u.userId}, 'alpha', ${a1}, 'x') returning id`.execute(
        deps.db,
      )
    ).rows[0]!.id
    await sql`insert into agents (user_id, name, address, encrypted_key, created_at) values (${u.userId}, 'beta', ${a2}, 'x', now() + interval '1 second')`.execute(
      deps.db,
    )
    const seller = await sql<{
      id: string
    }>`insert into sellers (namespace, display_name, owner_user_id) values ('ins-shop', 's', ${u.userId}) returning id`.execute(
      deps.db,
    )
    const service = await sql<{
      id: string
    }>`insert into services (seller_id, name, display_name, pay_to) values (${seller.rows[0]!.id}, 'data', 'd', ${'0x' + '22'.repeat(20)}) returning id`.execute(
      deps.db,
    )
    const eps = await sql<{
      id: string
      slug: string
    }>`insert into endpoints (service_id, slug, methods, price, handler) values (${service.rows[0]!.id}, 'price', '{GET}', 1000, 'x'), (${service.rows[0]!.id}, 'quote', '{GET}', 5000, 'x') returning id, slug`.execute(
      deps.db,
    )
    const price = eps.rows.find((e) => e.slug === 'price')!.id
    const quote = eps.rows.find((e) => e.slug === 'quote')!.id
    let n = 0
    const pay = async (o: {
      endpoint?: string
      payer: string
      value: number
      status: string
      at: string
      settledAfterMs?: number
    }) => {
      n++
      const settled =
        o.settledAfterMs === undefined ? null : new Date(Date.parse(o.at) + o.settledAfterMs).toISOString()
      await sql`insert into payments (${columns}) values (gen_random_uuid(), ${o.endpoint ?? null}, 'r', 'GET', 2, 'eip155:84532', 'a', ${o.payer}, 'p', ${o.value}, 0, 1, ${'n' + n}, 's', ${o.status}, ${o.at}::timestamptz, ${settled}::timestamptz)`.execute(
        deps.db,
      )
    }
    // day 1: alpha pays 1000 (settled in 2 s) and 3000 (voided: not counted); beta 2000 (lower-case payer)
    await pay({ payer: a1, value: 1000, status: 'settled', at: '2026-11-01T10:00:00Z', settledAfterMs: 2000 })
    await pay({ payer: a1, value: 3000, status: 'voided', at: '2026-11-01T11:00:00Z' })
    await pay({ payer: a2, value: 2000, status: 'served', at: '2026-11-01T23:59:59Z' })
    // day 2: outsiders pay the user's endpoints: price 1000 ×2 (settled in 1 s and 3 s), quote 5000 failed
    await pay({
      endpoint: price,
      payer: '0x' + '33'.repeat(20),
      value: 1000,
      status: 'settled',
      at: '2026-11-02T00:00:00Z',
      settledAfterMs: 1000,
    })
    await pay({
      endpoint: price,
      payer: '0x' + '33'.repeat(20),
      value: 1000,
      status: 'settled',
      at: '2026-11-02T05:00:00Z',
      settledAfterMs: 3000,
    })
    await pay({
      endpoint: quote,
      payer: '0x' + '33'.repeat(20),
      value: 5000,
      status: 'failed',
      at: '2026-11-02T06:00:00Z',
    })
    // day 3: alpha pays the user's own endpoint (both sides), and a seller elsewhere accepted 7000 the platform signed for alpha
    await pay({ endpoint: quote, payer: a1.toLowerCase(), value: 5000, status: 'settling', at: '2026-11-03T12:00:00Z' })
    await sql`insert into agent_payments (agent_id, status, x402_version, url, method, network, asset, payer, pay_to, amount, nonce, valid_after, valid_before, day_window, month_window)
    values (${alphaId}, 'accepted', 2, 'https://elsewhere.example/x', 'GET', 'eip155:84532', 'a', ${a1.toLowerCase()}, 'p', 7000, 'ext-1', 0, 1, '2026-11-03', '2026-11'),
           (${alphaId}, 'rejected', 2, 'https://elsewhere.example/x', 'GET', 'eip155:84532', 'a', ${a1.toLowerCase()}, 'p', 9000, 'ext-2', 0, 1, '2026-11-03', '2026-11')`.execute(
      deps.db,
    )
    // outside the range, and another user's
    await pay({ payer: a1, value: 1000, status: 'settled', at: '2026-10-31T23:59:59Z', settledAfterMs: 1 })
    await pay({
      payer: '0x' + '44'.repeat(20),
      value: 1000,
      status: 'settled',
      at: '2026-11-02T00:00:00Z',
      settledAfterMs: 1,
    })

    const res = await app.inject({ method: 'GET', url: '/v1/insights?from=2026-11-01&to=2026-11-04', headers: u.auth })
    t.equal(res.statusCode, 200)
    const i = res.json()
    t.same(i.days, ['2026-11-01', '2026-11-02', '2026-11-03', '2026-11-04'])
    t.same(i.spend, [
      { agent: a1, name: 'alpha', total: '13000', daily: ['1000', '0', '12000', '0'] },
      { agent: a2, name: 'beta', total: '2000', daily: ['2000', '0', '0', '0'] },
    ])
    t.same(i.revenue, [
      {
        endpoint_id: price,
        path: 'ins-shop/data/price',
        total: '2000',
        calls_total: 2,
        daily: ['0', '2000', '0', '0'],
        calls: [0, 2, 0, 0],
      },
      {
        endpoint_id: quote,
        path: 'ins-shop/data/quote',
        total: '5000',
        calls_total: 1,
        daily: ['0', '0', '5000', '0'],
        calls: [0, 0, 1, 0],
      },
    ])
    t.same(i.calls, {
      buyer: [2, 0, 1, 0],
      buyer_failures: [1, 0, 0, 0],
      seller: [0, 2, 1, 0],
      seller_failures: [0, 1, 0, 0],
    })
    t.same(i.settlement_delay.settled, [1, 2, 0, 0])
    t.same(i.settlement_delay.p50_ms, [2000, 2000, null, null])
    t.equal(i.settlement_delay.p95_ms[1], 2900)

    t.same(
      (
        await app.inject({ method: 'GET', url: '/v1/insights?from=2026-11-01&to=2026-11-04', headers: other.auth })
      ).json().spend,
      [],
      'another user sees none of it',
    )

    for (const [q, param, message] of [
      ['from=2026-11-31', 'from', 'expected a UTC date such as 2026-11-01'],
      ['from=yesterday', 'from', 'expected a UTC date'],
      ['from=2026-11-05&to=2026-11-04', 'from', 'must be on or before `to`'],
      ['from=2025-01-01&to=2026-11-04', 'from', 'at most 366 days'],
      ['to=2026-02-30', 'to', 'expected a UTC date'],
    ] as const) {
      const bad = await app.inject({ method: 'GET', url: `/v1/insights?${q}`, headers: u.auth })
      t.equal(bad.statusCode, 400, q)
      t.match(bad.json(), { code: 'invalid_parameter', param, message: new RegExp(message.replace(/[()`]/g, '.')) }, q)
    }
    t.equal((await app.inject({ method: 'GET', url: '/v1/insights' })).statusCode, 401)
    const def = insightsRange({}, new Date('2026-11-24T15:00:00Z'))
    t.equal(def.days.length, 30)
    t.equal(def.days.at(-1), '2026-11-24', 'the default range ends today')
  },
)

t.test("insights read only the user's rows (plans among 100,000 payments of others)", async (t) => {
  const { deps } = await accountsApp(t)
  const u = await userWithKey(deps)
  const agent = '0xbbbb000000000000000000000000000000000001'
  await sql`insert into agents (user_id, name, address, encrypted_key) values (${u.userId}, 'a', ${agent}, 'x')`.execute(
    deps.db,
  )
  const seller = await sql<{
    id: string
  }>`insert into sellers (namespace, display_name, owner_user_id) values ('plan-shop', 's', ${u.userId}) returning id`.execute(
    deps.db,
  )
  const service = await sql<{
    id: string
  }>`insert into services (seller_id, name, display_name, pay_to) values (${seller.rows[0]!.id}, 'svc', 's', ${'0x' + '22'.repeat(20)}) returning id`.execute(
    deps.db,
  )
  const ep = await sql<{
    id: string
  }>`insert into endpoints (service_id, slug, methods, price, handler) values (${service.rows[0]!.id}, 'ep', '{GET}', 1000, 'x') returning id`.execute(
    deps.db,
  )
  await sql`insert into payments (${columns})
    select gen_random_uuid(), null, 'r', 'GET', 2, 'eip155:84532', 'a', '0x' || lpad(to_hex(g % 5000), 40, '0'), 'p', 1000, 0, 1, md5(g::text), 's', 'settled',
      timestamptz '2026-11-01' + g * interval '20 second', timestamptz '2026-11-01' + g * interval '20 second' + interval '2 second'
    from generate_series(1, 100000) g`.execute(deps.db)
  await sql`insert into payments (${columns})
    select gen_random_uuid(), case when g % 2 = 0 then ${ep.rows[0]!.id}::uuid end, 'r', 'GET', 2, 'eip155:84532', 'a', case when g % 2 = 0 then '0x' || lpad(to_hex(99), 40, '0') else ${agent} end,
      'p', 1000, 0, 1, md5('u' || g), 's', 'settled', timestamptz '2026-11-01' + g * interval '1 hour', timestamptz '2026-11-01' + g * interval '1 hour' + interval '1 second'
    from generate_series(1, 40) g`.execute(deps.db)
  await sql`analyze`.execute(deps.db)
  // the service's own statements, captured and explained
  const pool = new pg.Pool({
    connectionString: deps.config.databaseUrl,
    options: `-c search_path=${deps.config.databaseSchema}`,
    max: 1,
  })
  const seen: CompiledQuery[] = []
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }), log: (e) => void seen.push(e.query) })
  t.teardown(() => db.destroy())
  const i = await insights(db, u.userId, { from: '2026-11-01', to: '2026-11-03' })
  t.equal(i.spend[0]!.total, '20000', 'the agent paid 20 × 1000')
  t.equal(i.revenue[0]!.calls_total, 20)
  t.equal(
    i.settlement_delay.settled.reduce((a, b) => a + b, 0),
    40,
  )
  const onPayments = seen.filter((q) => /from payments p/.test(q.sql))
  t.equal(onPayments.length, 4, 'spend, external spend, revenue and delay')
  for (const q of onPayments) {
    const { rows } = await pool.query(`explain (analyze, format json) ${q.sql}`, q.parameters as unknown[])
    const plan = nodes((rows[0]['QUERY PLAN'] as Array<{ Plan: PlanNode & { 'Actual Rows'?: number } }>)[0]!.Plan)
    const label = q.sql.replace(/\s+/g, ' ').slice(0, 60)
    t.notOk(
      plan.find((n) => n['Node Type'] === 'Seq Scan' && n['Relation Name'] === 'payments'),
      `${label}: no sequential scan of payments`,
    )
    const read = plan
      .filter((n) => n['Relation Name'] === 'payments')
      .reduce((sum, n) => sum + ((n as { 'Actual Rows'?: number })['Actual Rows'] ?? 0), 0)
    t.ok(read <= 40, `${label}: ${read} payment rows read (of 100,040)`)
  }
})

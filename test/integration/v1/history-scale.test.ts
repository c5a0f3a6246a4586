import { Kysely, PostgresDialect, sql, type CompiledQuery } from 'kysely'
import pg from 'pg'
import t from 'tap'
import type { Database } from '../../../src/db/database.js'
import type { Deps } from '../../../src/deps.js'
import { createHistory, type HistoryFilters, type HistoryKind } from '../../../src/services/accounts/history-export.js'
import { accountsApp, userWithKey } from '../../helpers/accounts.js'

// A user with a handful of payments among 200,000 of other users: a page of the user's history
// must be read through the indexes that start with the user filter, not by walking everyone's.

interface PlanNode {
  'Node Type': string
  'Relation Name'?: string
  'Index Name'?: string
  'Actual Rows'?: number
  'Actual Loops'?: number
  'Rows Removed by Filter'?: number
  'Rows Removed by Index Recheck'?: number
  Plans?: PlanNode[]
}
const nodes = (n: PlanNode): PlanNode[] => [n, ...(n.Plans ?? []).flatMap(nodes)]

const OTHERS = 200_000

async function seed(deps: Deps) {
  const { userId } = await userWithKey(deps)
  const other = await userWithKey(deps)
  const a1 = '0xAAaA000000000000000000000000000000000001' // stored checksummed (EIP-55), paid in both cases
  const a2 = '0xaaaa000000000000000000000000000000000002'
  await sql`insert into agents (user_id, name, address, encrypted_key) values (${userId}, 'a1', ${a1}, 'unused'), (${userId}, 'a2', ${a2}, 'unused')`.execute(
    deps.db,
  )
  const [mine, theirs] = await Promise.all(
    [userId, other.userId].map(async (owner, i) => {
      const seller = await sql<{
        id: string
      }>`insert into sellers (namespace, display_name, owner_user_id) values (${`scale-${i}`}, 's', ${owner}) returning id`.execute(
        deps.db,
      )
      const service = await sql<{
        id: string
      }>`insert into services (seller_id, name, display_name, pay_to) values (${seller.rows[0]!.id}, 'svc', 's', ${'0x' + '22'.repeat(20)}) returning id`.execute(
        deps.db,
      )
      // the other seller has 20 endpoints, one of them busy
      const endpoints = await sql<{ id: string }>`insert into endpoints (service_id, slug, methods, price, handler)
      select ${service.rows[0]!.id}, 'ep-' || g, '{GET}', 1000, 'hash-generator' from generate_series(1, ${i === 0 ? 1 : 20}) g returning id`.execute(
        deps.db,
      )
      return endpoints.rows.map((r) => r.id)
    }),
  )
  const columns = sql`id, endpoint_id, resource, method, x402_version, network, asset, payer, pay_to, value, valid_after, valid_before, nonce, signature, status, created_at`
  // everyone else: 5,000 payers, half of the payments to the other user's endpoints, one a second
  await sql`insert into payments (${columns})
    select gen_random_uuid(), case when g % 2 = 0 then (${theirs}::uuid[])[1 + g % 20] end, 'r', 'GET', 2, 'eip155:84532', 'a',
      '0x' || lpad(to_hex(g % 5000), 40, '0'), 'p', 1000, 0, 1, md5(g::text), 's', 'served', timestamptz '2026-11-01' + g * interval '1 second'
    from generate_series(1, ${OTHERS}) g`.execute(deps.db)
  // the user's ten, spread over the same period: 5 bought by the agents (either case), 4 sold to
  // outsiders, 1 bought from the user's own endpoint (listed once)
  await sql`insert into payments (${columns})
    select gen_random_uuid(), case when g > 5 then ${mine[0]}::uuid end, 'r', 'GET', 2, 'eip155:84532', 'a',
      case when g <= 5 then (case when g % 2 = 0 then ${a1} else ${a2} end) when g = 10 then lower(${a1}) else '0x' || lpad(to_hex(90000 + g), 40, '0') end,
      'p', 1000, 0, 1, md5('u' || g), 's', 'served', timestamptz '2026-11-01' + g * 17000 * interval '1 second'
    from generate_series(1, 10) g`.execute(deps.db)
  await sql`insert into payment_events (payment_id, type, to_status, created_at) select id, 'verified', 'verified', created_at from payments`.execute(
    deps.db,
  )
  await sql`analyze`.execute(deps.db)
  return { userId, a1 }
}

/** Runs a page through the real service, then EXPLAIN ANALYZE of the history query it sent. */
async function explainPage(
  t: { teardown(fn: () => unknown): void },
  deps: Deps,
  kind: HistoryKind,
  userId: string,
  f: HistoryFilters,
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
  }).page(kind, userId, f, 20)
  const query = seen.at(-1)!
  const { rows } = await pool.query(`explain (analyze, format json) ${query.sql}`, query.parameters as unknown[])
  return { page, plan: nodes((rows[0]['QUERY PLAN'] as Array<{ Plan: PlanNode }>)[0]!.Plan) }
}

t.test("a small user among 200,000 payments: pages read only the user's rows", async (t) => {
  const { deps } = await accountsApp(t)
  const started = Date.now()
  const { userId, a1 } = await seed(deps)
  t.comment(`seeded ${OTHERS} payments in ${Date.now() - started} ms`)

  // the reference: the user filter as written before, without the new query shapes
  const reference = async (kind: HistoryKind, f: HistoryFilters) => {
    const dir = f.order === 'desc' ? sql.raw('desc') : sql.raw('asc')
    const mine = sql`lower(p.payer) in (select lower(address) from agents where user_id = ${userId})`
    const sold = sql`p.endpoint_id in (select e.id from endpoints e join services s on s.id = e.service_id join sellers sl on sl.id = s.seller_id where sl.owner_user_id = ${userId})`
    const scope = f.role === 'buyer' ? mine : f.role === 'seller' ? sold : sql`(${mine} or ${sold})`
    const agent = f.agent ? sql`and lower(p.payer) = lower(${f.agent})` : sql``
    const from = f.from
      ? kind === 'transactions'
        ? sql`and p.created_at >= ${f.from}::timestamptz`
        : sql`and ev.created_at >= ${f.from}::timestamptz`
      : sql``
    const q =
      kind === 'transactions'
        ? sql<{
            id: string
          }>`select p.id::text as id from payments p where ${scope} ${agent} ${from} order by p.created_at ${dir}, p.id ${dir}`
        : sql<{
            id: string
          }>`select ev.id::text as id from payment_events ev join payments p on p.id = ev.payment_id where ${scope} ${agent} ${from} order by ev.created_at ${dir}, ev.id ${dir}`
    return (await q.execute(deps.db)).rows.map((r) => r.id)
  }

  const cases: Array<[string, HistoryFilters]> = [
    ['asc', {}],
    ['desc', { order: 'desc' }],
    ['from', { from: '2026-11-02T00:00:00Z' }],
    ['from desc', { from: '2026-11-02T00:00:00Z', order: 'desc' }],
    ['role=buyer', { role: 'buyer' }],
    ['role=seller desc', { role: 'seller', order: 'desc' }],
    ['agent', { agent: a1, order: 'desc' }],
  ]
  for (const kind of ['transactions', 'payment_events'] as const) {
    for (const [label, f] of cases) {
      const { page, plan } = await explainPage(t, deps, kind, userId, f)
      const want = await reference(kind, f)
      t.ok(want.length > 0 && want.length < 20, `${kind} ${label}: the user has ${want.length} rows`)
      t.same(
        page.data.map((r) => r.id),
        want,
        `${kind} ${label}: the same rows in the same order as the plain filter`,
      )
      const where = `${kind} ${label}`
      t.notOk(
        plan.find((n) => n['Node Type'] === 'Seq Scan' && ['payments', 'payment_events'].includes(n['Relation Name']!)),
        `${where}: no sequential scan of payments or payment_events`,
      )
      t.notOk(
        plan.find(
          (n) => n['Index Name'] === 'payments_created_idx' || n['Index Name'] === 'payment_events_created_idx',
        ),
        `${where}: no walk of everyone's rows in (created_at, id) order`,
      )
      // rows any scan of the two big tables looked at (kept or filtered out), all loops counted
      const read = plan
        .filter((n) => /Scan/.test(n['Node Type']) && ['payments', 'payment_events'].includes(n['Relation Name']!))
        .reduce(
          (sum, n) =>
            sum +
            ((n['Actual Rows'] ?? 0) + (n['Rows Removed by Filter'] ?? 0) + (n['Rows Removed by Index Recheck'] ?? 0)) *
              (n['Actual Loops'] ?? 1),
          0,
        )
      t.ok(read <= 100, `${where}: ${read} rows read from payments and payment_events (of ${2 * OTHERS})`)
    }
  }
  // the second page continues from the cursor, still by the indexes
  const first = await explainPage(t, deps, 'transactions', userId, { order: 'desc' })
  const p1 = await createHistory({
    db: deps.db,
    databaseUrl: deps.config.databaseUrl,
    databaseSchema: deps.config.databaseSchema,
  }).page('transactions', userId, { order: 'desc' }, 4)
  const p2 = await explainPage(t, deps, 'transactions', userId, { order: 'desc', cursor: p1.next_cursor! })
  t.same(
    [...p1.data, ...p2.page.data].map((r) => r.id),
    first.page.data.map((r) => r.id),
    'page 1 (4 rows) then page 2 from its cursor give the whole list',
  )
  t.notOk(
    p2.plan.find(
      (n) =>
        n['Index Name'] === 'payments_created_idx' ||
        (n['Node Type'] === 'Seq Scan' && ['payments', 'payment_events'].includes(n['Relation Name']!)),
    ),
    "the cursor page uses the user's indexes too",
  )
  t.comment(`test ran in ${Date.now() - started} ms`)
})

import { randomUUID } from 'node:crypto'
import { sql } from 'kysely'
import t from 'tap'
import { scopeQuery, type HistoryScope } from '../../../src/services/accounts/history-export.js'
import { testDeps } from '../../helpers/test-env.js'

// Every history page first reads which endpoints the user sells. Among 20,000 other sellers that
// must go through an index on the owner, not read every seller.

interface PlanNode {
  'Node Type': string
  'Relation Name'?: string
  'Index Name'?: string
  Plans?: PlanNode[]
}
const nodes = (n: PlanNode): PlanNode[] => [n, ...(n.Plans ?? []).flatMap(nodes)]

t.test("a user's sold endpoints are found through the sellers' owner index", async (t) => {
  const deps = await testDeps(t)
  await sql`insert into sellers (namespace, display_name, owner_user_id) select 'other-' || g, 'o', gen_random_uuid() from generate_series(1, 20000) g`.execute(
    deps.db,
  )
  const userId = randomUUID()
  const seller = await deps.db
    .insertInto('sellers')
    .values({ namespace: 'mine', display_name: 'mine', owner_user_id: userId })
    .returning('id')
    .executeTakeFirstOrThrow()
  const service = await deps.db
    .insertInto('services')
    .values({ seller_id: seller.id, name: 'svc', display_name: 'svc', pay_to: `0x${'22'.repeat(20)}` })
    .returning('id')
    .executeTakeFirstOrThrow()
  const endpoints = await deps.db
    .insertInto('endpoints')
    .values(
      ['a', 'b'].map((slug) => ({ service_id: service.id, slug, methods: ['GET'], price: '1000', handler: 'echo' })),
    )
    .returning('id')
    .execute()
  await sql`analyze sellers`.execute(deps.db)

  const scope = (await scopeQuery(userId).execute(deps.db)).rows[0] as HistoryScope
  t.same([...scope.sold].sort(), endpoints.map((e) => e.id).sort(), "exactly the user's endpoints")
  t.same(scope.mine, [], 'no agents')

  const plan = (
    await sql<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>`explain (format json) ${scopeQuery(userId)}`.execute(deps.db)
  ).rows[0]!['QUERY PLAN'][0].Plan
  const onSellers = nodes(plan).filter((n) => n['Relation Name'] === 'sellers')
  t.ok(onSellers.length > 0, 'the plan reads sellers')
  t.same(
    onSellers.filter((n) => n['Node Type'] === 'Seq Scan'),
    [],
    'no sequential scan of all sellers',
  )
  t.ok(
    onSellers.some((n) => n['Index Name'] === 'sellers_owner_idx'),
    'sellers are found by owner',
  )
})

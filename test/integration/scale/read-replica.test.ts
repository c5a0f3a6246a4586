import { sql } from 'kysely'
import t from 'tap'
import { accountsApp, userWithKey } from '../../helpers/accounts.js'
import { TEST_DATABASE_URL, uniqueName } from '../../helpers/test-env.js'

// DATABASE_READ_URL points at the same database here, under an application_name of its own, so the
// connections of the read pool (and the last statement each ran) can be told apart from the primary's.
t.test('history and the marketplace read through DATABASE_READ_URL; writes do not', async (t) => {
  const appName = uniqueName('tgread')
  const { deps, app } = await accountsApp(t, { DATABASE_READ_URL: `${TEST_DATABASE_URL}?application_name=${appName}` })
  t.not(deps.readDb, deps.db, 'a pool of its own')
  const readQueries = async () =>
    (
      await sql<{ query: string }>`select query from pg_stat_activity where application_name = ${appName}`.execute(
        deps.db,
      )
    ).rows.map((r) => r.query)
  t.same(await readQueries(), [], 'no read connection before a read')

  const { auth } = await userWithKey(deps)
  const created = await app.inject({ method: 'POST', url: '/v1/agents', headers: auth, payload: { name: 'r' } })
  t.equal(created.statusCode, 201, created.body)
  t.same(await readQueries(), [], 'writes (and the reads of a write) stay on DATABASE_URL')

  const page = await app.inject({ url: '/v1/transactions', headers: auth })
  t.equal(page.statusCode, 200, page.body)
  t.match((await readQueries()).join('\n'), /select p.id::text as id/, 'the history page ran on the read pool')

  const csv = await app.inject({ url: '/v1/payment-events?format=csv', headers: auth })
  t.equal(csv.statusCode, 200)
  t.match(csv.body, /^id,/, 'the export answers')

  const market = await app.inject({ url: '/api/v1/agents/marketplace' })
  t.equal(market.statusCode, 200, market.body)
  t.match(
    (await readQueries()).join('\n'),
    /curated_agent|endpoints|sellers/,
    'the marketplace snapshot loaded from it',
  )
})

t.test('without DATABASE_READ_URL the reads use the primary pool', async (t) => {
  const { deps } = await accountsApp(t)
  t.equal(deps.readDb, deps.db)
})

/**
 * migrations/2026-11-28T0900-agent-names-unique.ts on a database that already has agents sharing a
 * name (as the README's own example could make): the oldest keeps its name, the later ones get
 * their address added, no agent is lost, and a new duplicate is refused by the index.
 */
import { readdirSync } from 'node:fs'
import { sql } from 'kysely'
import t from 'tap'
import { createDb } from '../../../src/db/create-db.js'
import { createMigrator, migrateToLatest, migrationsFolder } from '../../../src/db/migrate.js'
import { despiteOtherRuns, TEST_DATABASE_URL, testSchema } from '../../helpers/test-env.js'

const MIGRATION = '2026-11-28T0900-agent-names-unique'

t.test('existing duplicate agent names are renamed safely, then names are unique per user', async (t) => {
  const schema = await testSchema(t, { migrate: false })
  const db = createDb({ databaseUrl: TEST_DATABASE_URL, schema, max: 1 })
  t.teardown(() => db.destroy())
  const names = readdirSync(migrationsFolder)
    .filter((f) => /\.(ts|js)$/.test(f) && !f.endsWith('.d.ts'))
    .map((f) => f.replace(/\.(ts|js)$/, ''))
    .sort()
  const before = names[names.indexOf(MIGRATION) - 1]!
  t.ok(before, `migrates to ${before} first`)
  const to = await despiteOtherRuns(schema, () => createMigrator(db, schema).migrateTo(before))
  t.error(to.error)

  const [alice, bob] = await Promise.all(
    ['alice', 'bob'].map(
      async (who) =>
        (
          await sql<{
            id: string
          }>`insert into users (email, password_hash) values (${`${who}@example.com`}, 'x') returning id`.execute(db)
        ).rows[0]!.id,
    ),
  )
  const addr = (n: number) => `0x${n.toString(16).padStart(40, '0')}`
  const agents: Array<[string, string, string, string]> = [
    [alice!, 'research-bot', addr(1), '2026-01-01T00:00:00Z'],
    [alice!, 'research-bot', addr(2), '2026-01-02T00:00:00Z'],
    [alice!, 'Research-Bot', addr(3), '2026-01-03T00:00:00Z'],
    [alice!, 'x'.repeat(100), addr(4), '2026-01-01T00:00:00Z'],
    [alice!, 'x'.repeat(100), addr(5), '2026-01-02T00:00:00Z'],
    [bob!, 'research-bot', addr(6), '2026-01-05T00:00:00Z'],
  ]
  for (const [user, name, address, at] of agents)
    await sql`insert into agents (user_id, name, address, encrypted_key, created_at) values (${user}, ${name}, ${address}, 'k', ${at})`.execute(
      db,
    )

  await despiteOtherRuns(schema, () => migrateToLatest(db, schema))
  const rows = (
    await sql<{ address: string; name: string }>`select address, name from agents order by address`.execute(db)
  ).rows
  t.equal(rows.length, 6, 'no agent lost')
  const byAddress = Object.fromEntries(rows.map((r) => [r.address, r.name]))
  t.equal(byAddress[addr(1)], 'research-bot', 'the oldest keeps its name')
  t.equal(byAddress[addr(2)], `research-bot (${addr(2)})`, 'a later one gets its address added')
  t.equal(byAddress[addr(3)], `Research-Bot (${addr(3)})`, 'names compare without case')
  t.equal(byAddress[addr(4)], 'x'.repeat(100))
  t.equal(byAddress[addr(5)], `${'x'.repeat(55)} (${addr(5)})`, 'a long name is cut to stay within 100 characters')
  t.ok(byAddress[addr(5)]!.length <= 100)
  t.equal(byAddress[addr(6)], 'research-bot', "another user's agent of that name is left alone")

  const dup =
    await sql`insert into agents (user_id, name, address, encrypted_key) values (${alice}, 'RESEARCH-BOT', ${addr(7)}, 'k')`
      .execute(db)
      .catch((err) => err)
  t.match(dup, { constraint: 'agents_user_name_unique' }, 'the index refuses a new duplicate')
})

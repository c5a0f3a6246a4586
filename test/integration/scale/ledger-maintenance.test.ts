import { randomUUID } from 'node:crypto'
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { gunzipSync } from 'node:zlib'
import { parse } from 'csv-parse/sync'
import type { Job } from 'bullmq'
import { sql, type Kysely } from 'kysely'
import pg from 'pg'
import t from 'tap'
import { archiveCli } from '../../../src/cli/commands/archive.js'
import type { Database } from '../../../src/db/database.js'
import { ensureLedgerPartitions, listLedgerPartitions, utcDay } from '../../../src/ledger/partitions.js'
import { jobs } from '../../../workers/index.js'
import type { JobContext } from '../../../workers/job.js'
import { ledgerPartitions } from '../../../workers/ledger-partitions.js'
import { TEST_DATABASE_URL, testDeps } from '../../helpers/test-env.js'

const DAY = 86400_000

async function insertPayment(db: Kysely<Database>, status: string, createdAt: string): Promise<string> {
  const id = randomUUID()
  await sql`insert into payments (id, resource, method, x402_version, network, asset, payer, pay_to, value, valid_after,
      valid_before, nonce, signature, status, created_at, updated_at)
    values (${id}, 'http://proxy/a/b/c', 'GET', 2, 'eip155:84532', '0xasset', '0x1111111111111111111111111111111111111111',
      '0x2222222222222222222222222222222222222222', 1000, 0, 0, ${id}, '0x', ${status}, ${createdAt}, ${createdAt})`.execute(
    db,
  )
  await sql`insert into payment_events (payment_id, type, from_status, to_status, reason, created_at)
    values (${id}, ${status}, null, ${status}, 'a, "quoted"
reason', ${createdAt})`.execute(db)
  return id
}

/** a call served on a sign-in (access_uses, partitioned by day with the ledger) */
async function insertAccessUse(db: Kysely<Database>, createdAt: string): Promise<string> {
  const id = randomUUID()
  await sql`insert into access_uses (id, created_at, payer, endpoint_id, scope_id, payment_id, resource, method, pay_to)
    values (${id}, ${createdAt}, '0x1111111111111111111111111111111111111111', ${randomUUID()}, ${randomUUID()},
      ${randomUUID()}, 'http://proxy/a/b/c', 'GET', '0x2222222222222222222222222222222222222222')`.execute(db)
  return id
}

const partOf = async (db: Kysely<Database>, table: 'payments' | 'payment_events', col: string, id: string) =>
  (
    await sql<{
      p: string
    }>`select tableoid::regclass::text as p from ${sql.id(table)} where ${sql.ref(col)} = ${id}`.execute(db)
  ).rows[0]?.p

function logCapture() {
  const warnings: string[] = []
  const log = { info: () => {}, error: () => {}, warn: (_o: unknown, msg: string) => void warnings.push(msg) }
  return { log: log as unknown as JobContext['log'], warnings }
}

const compact = (day: string) => day.replaceAll('-', '')

t.test('the worker creates days ahead and moves what the default partition took', async (t) => {
  const deps = await testDeps(t, { LEDGER_PARTITIONS_AHEAD_DAYS: '25' })
  t.ok(
    jobs.some((j) => j.name === 'ledger-partitions' && j.everyMs?.(deps)),
    'a repeatable job of the worker',
  )
  // 20 days ahead: no day partition yet (the migration made 7), so the default one takes it
  const at = new Date(Date.now() + 20 * DAY).toISOString()
  const id = await insertPayment(deps.db, 'served', at)
  t.equal(await partOf(deps.db, 'payments', 'id', id), 'payments_default', 'an insert never fails')
  t.equal(await partOf(deps.db, 'payment_events', 'payment_id', id), 'payment_events_default')
  const { log } = logCapture()
  const r = (await ledgerPartitions.process({ deps, log } as JobContext, {} as Job)) as { created: number }
  t.ok(r.created >= 3 * 18, `created ${r.created} partitions`)
  const day = compact(utcDay(new Date(at)))
  t.equal(await partOf(deps.db, 'payments', 'id', id), `payments_p${day}`, 'the payment moved into its day')
  t.equal(await partOf(deps.db, 'payment_events', 'payment_id', id), `payment_events_p${day}`, 'its event too')
  const again = (await ledgerPartitions.process({ deps, log } as JobContext, {} as Job)) as { created: number }
  t.equal(again.created, 0, 'a second run has nothing to do')
  const last = (await listLedgerPartitions(deps.db)).at(-1)!
  t.equal(last.day, utcDay(new Date(), 25))
})

t.test('retention drops old days, never one with payments not settled yet', async (t) => {
  const deps = await testDeps(t, { LEDGER_RETENTION_DAYS: '3' })
  const old = new Date(Date.now() - 10 * DAY)
  await ensureLedgerPartitions(deps.db, 1, old)
  const at = new Date(old.getTime() + 3600_000).toISOString()
  await insertPayment(deps.db, 'settled', at)
  const open = await insertPayment(deps.db, 'served', at)
  const recent = await insertPayment(deps.db, 'settled', new Date().toISOString())
  await insertAccessUse(deps.db, at)
  const { log, warnings } = logCapture()
  const r1 = (await ledgerPartitions.process({ deps, log } as JobContext, {} as Job)) as { dropped: string[] }
  t.same(r1.dropped, [], 'nothing dropped while a payment is open')
  t.match(warnings.join('\n'), new RegExp(`payments_p${compact(utcDay(old))} \\(1 payment not settled yet\\)`))
  await sql`update payments set status = 'settling' where id = ${open}`.execute(deps.db)
  await sql`update payments set status = 'settled' where id = ${open}`.execute(deps.db)
  const r2 = (await ledgerPartitions.process({ deps, log } as JobContext, {} as Job)) as { dropped: string[] }
  t.same(
    r2.dropped.sort(),
    [0, 1]
      .flatMap((d) => ['payment_events', 'payments', 'access_uses'].map((x) => `${x}_p${compact(utcDay(old, d))}`))
      .sort(),
    'both old days of the three tables dropped',
  )
  const { rows } = await sql<{ id: string }>`select id from payments`.execute(deps.db)
  t.same(
    rows.map((x) => x.id),
    [recent],
    'the recent payment stays',
  )
})

t.test('tollgate archive writes old days to files, verified, and refuses while payments are open', async (t) => {
  const deps = await testDeps(t)
  const db = deps.db
  const old = new Date(Date.now() - 6 * DAY)
  await ensureLedgerPartitions(db, 2, old)
  const ids: string[] = []
  for (let d = 0; d < 3; d++)
    for (let i = 0; i < 5; i++)
      ids.push(await insertPayment(db, 'settled', new Date(old.getTime() + d * DAY + i * 60_000).toISOString()))
  const open = await insertPayment(db, 'settling', new Date(old.getTime() + DAY).toISOString())
  const recent = await insertPayment(db, 'served', new Date().toISOString())
  const use = await insertAccessUse(db, new Date(old.getTime() + 3600_000).toISOString())
  const dir = mkdtempSync(path.join(tmpdir(), 'tollgate-archive-'))
  const run = async (...args: string[]) => {
    const out: string[] = []
    const err: string[] = []
    const code = await archiveCli(args, {
      out: (l) => out.push(l),
      err: (l) => err.push(l),
      env: {},
      config: deps.config,
    })
    return { code, out: out.join('\n'), err: err.join('\n') }
  }

  for (const bad of [
    ['--older-than', '3'],
    ['--dir', dir],
    ['--dir', dir, '--older-than', '0'],
    ['--dir', dir, '--before', '2026-13-40'],
    ['--dir', dir, '--before', utcDay(new Date(), 2)],
    ['--dir', dir, '--older-than', '3', '--before', utcDay(new Date())],
  ]) {
    const r = await run(...bad)
    t.equal(r.code, 2, `usage error: ${bad.join(' ')}`)
    t.ok(r.err.length > 0, 'says why')
  }

  const refused = await run('--dir', dir, '--older-than', '3')
  t.equal(refused.code, 1)
  t.match(refused.err, `payments_p${compact(utcDay(old, 1))} (1 payment not settled yet)`, 'names the partition')
  t.same(readdirSync(dir), [], 'nothing written')
  t.equal((await listLedgerPartitions(db)).filter((p) => p.day < utcDay(new Date(), -3)).length, 9, 'nothing detached')

  await sql`update payments set status = 'settled' where id = ${open}`.execute(db)
  // an earlier run that stopped after detaching one partition
  await sql.raw(`alter table payment_events detach partition payment_events_p${compact(utcDay(old, 2))}`).execute(db)
  // a long reader (an export) holds the table: the detach gives up instead of queueing every write behind it
  const reader = new pg.Client({
    connectionString: TEST_DATABASE_URL,
    options: `-c search_path=${deps.config.databaseSchema}`,
  })
  await reader.connect()
  await reader.query('begin')
  await reader.query('select count(*) from payments')
  const waited = Date.now()
  const blocked = await run('--dir', dir, '--older-than', '3')
  t.equal(blocked.code, 1)
  t.match(blocked.err, /could not lock payments within 3000 ms/)
  t.ok(Date.now() - waited < 20_000, 'gave up promptly')
  await reader.query('rollback')
  await reader.end()
  t.same(readdirSync(dir), [], 'nothing written')

  const done = await run('--dir', dir, '--older-than', '3')
  t.equal(done.code, 0, done.err)
  t.match(done.out, /\[1\/9\] payments_p\d{8}: detached, 5 rows; writing/, 'progress per partition')
  t.match(done.out, /archived 9 partitions, 33 rows/)
  const files = readdirSync(dir).sort()
  t.equal(files.length, 9, files.join(' '))
  let archivedUses: string[] = []
  let archivedPayments = 0
  for (const f of files) {
    const records = parse(gunzipSync(readFileSync(path.join(dir, f))), { columns: true }) as Record<string, string>[]
    if (f.startsWith('payments_')) {
      archivedPayments += records.length
      t.ok(
        records.every((r) => r.status === 'settled' && ids.concat(open).includes(r.id!)),
        `${f}: settled payments`,
      )
    } else if (f.startsWith('access_uses_')) archivedUses = archivedUses.concat(records.map((r) => r.id!))
    else
      t.ok(
        records.every((r) => r.reason === 'a, "quoted"\nreason'),
        `${f}: events round-trip through CSV`,
      )
  }
  t.equal(archivedPayments, 16, 'every archived payment is in a file')
  t.same(archivedUses, [use], 'and the sign-in use of those days')
  t.same(await listLedgerPartitions(db).then((ps) => ps.filter((p) => p.day < utcDay(new Date(), -3))), [])
  const { rows } = await sql<{ id: string }>`select id from payments`.execute(db)
  t.same(
    rows.map((r) => r.id),
    [recent],
    'only the recent payment is left',
  )
  const again = await run('--dir', dir, '--older-than', '3')
  t.equal(again.code, 0)
  t.match(again.out, /no day partitions before/)
})

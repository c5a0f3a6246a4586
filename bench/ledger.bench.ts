/**
 * The proxy's ledger writes alone (no HTTP, no Redis): payments recorded through the group-commit
 * writer as the paid route does, each followed by its `served` outcome, on the real schema with
 * 200,000 older settled payments in place. Each case runs in its own schema, in the same run:
 *   current schema
 *   with payments_endpoint_fk put back (the schema before migration 2026-11-23T0600)
 * Prints payments/s and the Postgres CPU time per payment (all postgres processes, from /proc).
 *
 *   node --import tsx bench/ledger.bench.ts [seconds-per-case] [callers] [rounds]
 */
import { randomBytes, randomUUID } from 'node:crypto'
import { readFileSync, readdirSync } from 'node:fs'
import { sql } from 'kysely'
import { createDb } from '../src/db/create-db.js'
import { migrateToLatest } from '../src/db/migrate.js'
import { createLedgerWriter, type NewProxyPayment as NewVerifiedPayment } from '../src/ledger/ledger-writer.js'

const seconds = Number(process.argv[2] ?? 5)
// concurrent callers: like the proxy's connections, each records, then finishes, then starts again
const callers = Number(process.argv[3] ?? 32)
const rounds = Number(process.argv[4] ?? 2)
const databaseUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const hex = (n: number) => `0x${randomBytes(n).toString('hex')}`

/** CPU seconds used so far by every postgres process (backends, WAL writer, checkpointer). */
function postgresCpuSeconds(): number {
  let ticks = 0
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
      const close = stat.lastIndexOf(')')
      if (!stat.slice(stat.indexOf('(') + 1, close).startsWith('postgres')) continue
      const f = stat.slice(close + 2).split(' ')
      ticks += Number(f[11]) + Number(f[12])
    } catch {
      // the process ended meanwhile
    }
  }
  return ticks / 100
}

async function runCase(name: string, withFk: boolean): Promise<{ name: string; perSecond: number; cpuUs: number }> {
  const schema = `bench_ledger_${Date.now().toString(36)}`
  const db = createDb({ databaseUrl, schema, max: 4 })
  try {
    await migrateToLatest(db, schema)
    const seller = await db
      .insertInto('sellers')
      .values({ namespace: 'bench', display_name: 'bench' })
      .returning('id')
      .executeTakeFirstOrThrow()
    const service = await db
      .insertInto('services')
      .values({ seller_id: seller.id, name: 'svc', display_name: 'svc', pay_to: hex(20) })
      .returning('id')
      .executeTakeFirstOrThrow()
    const endpoint = await db
      .insertInto('endpoints')
      .values({ service_id: service.id, slug: 'echo', methods: ['GET'], price: '1000', handler: 'echo' })
      .returning('id')
      .executeTakeFirstOrThrow()
    if (withFk)
      await sql`alter table payments add constraint payments_endpoint_fk foreign key (endpoint_id) references endpoints (id) on delete set null`.execute(
        db,
      )
    // a table with history and statistics, as in production (plans differ on an empty one)
    await sql`insert into payments (id, endpoint_id, resource, method, x402_version, network, asset, payer, pay_to, value, valid_after,
                valid_before, nonce, signature, status, created_at, updated_at)
              select gen_random_uuid(), ${endpoint.id}::uuid, 'http://127.0.0.1/bench/svc/echo', 'GET', 2, 'eip155:84532', '0xasset',
                '0x' || md5((g % 5000)::text), '0xpayto', 1000, 0, 1, md5(g::text) || md5((g + 1)::text), repeat('ab', 65), 'settled',
                now() - interval '1 day', now() - interval '1 day'
              from generate_series(1, 200000) g`.execute(db)
    await sql`analyze payments`.execute(db)

    const ledger = createLedgerWriter(db)
    const payer = hex(20)
    const row = (): NewVerifiedPayment => ({
      id: randomUUID(),
      endpoint_id: endpoint.id,
      resource: 'http://127.0.0.1/bench/svc/echo',
      method: 'GET',
      x402_version: 2,
      network: 'eip155:84532',
      asset: hex(20),
      payer,
      pay_to: hex(20),
      value: 1000n,
      valid_after: 0n,
      valid_before: 1_900_000_000n,
      nonce: hex(32),
      signature: hex(65),
      settlement_mode: 'async',
    })
    let done = 0
    let stop = false
    const caller = async () => {
      while (!stop) {
        const p = row()
        if ((await ledger.record(p)) !== 'recorded') throw new Error('a fresh payment was refused')
        if (!(await ledger.finish(p.id, 'served'))) throw new Error('a recorded payment did not move to served')
        done++
      }
    }
    // the callers run through one second of warm-up (plans, caches) and then the measured window
    const running = Array.from({ length: callers }, caller)
    await new Promise((r) => setTimeout(r, 1000))
    const start = performance.now()
    const startDone = done
    const startCpu = postgresCpuSeconds()
    await new Promise((r) => setTimeout(r, seconds * 1000))
    const cpu = postgresCpuSeconds() - startCpu
    const n = done - startDone
    const elapsed = (performance.now() - start) / 1000
    stop = true
    await Promise.all(running)
    await ledger.drain()
    const result = { name, perSecond: n / elapsed, cpuUs: (cpu / n) * 1e6 }
    process.stderr.write(
      `${name}: ${Math.round(result.perSecond)} payments/s, Postgres ${result.cpuUs.toFixed(0)} µs CPU per payment\n`,
    )
    return result
  } finally {
    await sql`drop schema ${sql.id(schema)} cascade`.execute(db)
    await db.destroy()
  }
}

const results: Awaited<ReturnType<typeof runCase>>[] = []
for (let r = 0; r < rounds; r++) {
  // alternate the order, so neither case always runs on a warmer machine
  const cases: [string, boolean][] = [
    ['current schema', false],
    ['with payments_endpoint_fk', true],
  ]
  for (const [name, fk] of r % 2 ? cases.reverse() : cases) results.push(await runCase(name, fk))
}
console.log(
  `\n${seconds} s per case, ${callers} callers, ${rounds} rounds, record + served per payment, 200,000 older payments\n`,
)
console.log('| case | payments/s | Postgres CPU µs per payment |')
console.log('|---|---:|---:|')
for (const r of results) console.log(`| ${r.name} | ${Math.round(r.perSecond)} | ${r.cpuUs.toFixed(0)} |`)

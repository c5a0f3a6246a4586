/**
 * `npm run bench:capacity [calls=2000] [concurrency=16]`: what one paid call costs the shared
 * engines, for the capacity model in docs/scaling.md. A fresh devnet, schema and a redis-server of
 * its own (so INFO commandstats counts only this platform); a proxy and a worker in this process;
 * `calls` pre-signed v2 exact payments to the hosted hash-generator, then a wait until every one is
 * settled. Around the counted run it reads:
 *   - Postgres: rows inserted, updated and deleted per table of the schema (pg_stat_user_tables,
 *     flushed), and the growth of each table with its indexes and TOAST (pg_total_relation_size);
 *   - Redis: commands per call by command (INFO commandstats), less what the idle worker's
 *     schedulers and BullMQ polling issue in the same time (measured first, with no calls);
 *   - the chain: settlement gas per paid call (the receipts of the batches the worker sent).
 * Prints a Markdown table; nothing is asserted.
 */
import { loadavg } from 'node:os'
import { sql } from 'kysely'
import { Redis } from 'ioredis'
import { Agent, request } from 'undici'
import { createPublicClient, http } from 'viem'
import { startDevnet } from '../src/chain/devnet.js'
import { loadConfig } from '../src/config.js'
import { createDb } from '../src/db/create-db.js'
import { migrateToLatest } from '../src/db/migrate.js'
import { createDeps } from '../src/deps.js'
import { buildProxyApp } from '../src/http/proxy-app.js'
import { loadHandlerRegistry } from '../src/pool/handler-registry.js'
import { seedHostedServices } from '../src/services/hosted-seed.js'
import { startPrivateRedis } from '../test/helpers/redis-server.js'
import { startWorkers } from '../workers/index.js'
import { exactPayments } from './bench-payments.js'

const calls = Number(process.argv[2] ?? 2000)
const concurrency = Number(process.argv[3] ?? 16)
const IDLE_MS = 5_000
const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')
const loadAtStart = load()

const stops: Array<() => unknown> = []
const teardown = { teardown: (fn: () => unknown) => void stops.push(fn) }
try {
  const devnet = await startDevnet({ port: 0 })
  stops.push(() => devnet.stop())
  const redis = await startPrivateRedis(teardown)
  const schema = `bench_capacity_${Date.now().toString(36)}`
  const env = {
    DATABASE_URL: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
    DATABASE_SCHEMA: schema,
    REDIS_URL: redis.url,
    REDIS_PREFIX: 'tgcapacity',
    RPC_URL: devnet.rpcUrl,
    PROXY_URL: 'http://127.0.0.1:0',
    TOLLGATE_RECEIVER_ADDRESS: devnet.accounts.receiver.address,
    RELAYER_PRIVATE_KEYS: devnet.accounts.relayer.privateKey,
    LOG_LEVEL: 'silent',
  }
  const config = loadConfig(env)
  const migrationDb = createDb({ databaseUrl: config.databaseUrl, schema, max: 1 })
  await migrateToLatest(migrationDb, schema)
  await migrationDb.destroy()
  const admin = createDb({ databaseUrl: config.databaseUrl, schema: 'public', max: 1 })
  stops.push(async () => {
    await sql`drop schema if exists ${sql.id(schema)} cascade`.execute(admin)
    await admin.destroy()
  })
  const deps = createDeps(config)
  stops.push(() => deps.close())
  await seedHostedServices(deps, await loadHandlerRegistry())
  const proxy = await buildProxyApp(deps, { logger: false })
  await proxy.listen({ port: 0, host: '127.0.0.1' })
  stops.push(() => proxy.close())
  const proxyUrl = `http://127.0.0.1:${(proxy.server.address() as { port: number }).port}`
  const workers = await startWorkers(deps)
  stops.push(() => workers.close())
  const counter = new Redis(redis.url)
  stops.push(() => counter.disconnect())
  const chain = createPublicClient({ chain: devnet.chain, transport: http(devnet.rpcUrl) })

  const path = '/tollgate/toolbox/hash-generator?text=abc&algorithms=sha256'
  const challenge = await fetch(`${proxyUrl}${path}`)
  const required = JSON.parse(Buffer.from(challenge.headers.get('payment-required')!, 'base64').toString())
  const dispatcher = new Agent({ connections: concurrency })
  stops.push(() => dispatcher.close())

  /** `n` paid calls, `concurrency` at a time; the count answered 200 */
  const pay = async (n: number): Promise<number> => {
    const headers = exactPayments(devnet.accounts.demoPayer, config.chain, required, n).map((p) =>
      Buffer.from(JSON.stringify(p)).toString('base64'),
    )
    let next = 0
    let ok = 0
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < headers.length) {
          const h = headers[next++]!
          const res = await request(`${proxyUrl}${path}`, { dispatcher, headers: { 'payment-signature': h } })
          await res.body.dump()
          if (res.statusCode === 200) ok++
        }
      }),
    )
    return ok
  }
  const allSettled = async () => {
    for (;;) {
      const r = await sql<{ n: string }>`
        select count(*) as n from payments where status in ('verified', 'served', 'settling')`.execute(deps.db)
      if (r.rows[0]!.n === '0') return
      await new Promise((res) => setTimeout(res, 100))
    }
  }
  const tableStats = async () => {
    // this backend's counters are flushed now; other backends' within a second of their last commit
    await sql`select pg_stat_force_next_flush()`.execute(deps.db)
    const r = await sql<{ table: string; ins: string; upd: string; del: string; bytes: string }>`
      select relname as table, n_tup_ins as ins, n_tup_upd as upd, n_tup_del as del,
             pg_total_relation_size(relid) as bytes
      from pg_stat_user_tables where schemaname = ${schema}`.execute(deps.db)
    return new Map(r.rows.map((x) => [x.table, { ins: +x.ins, upd: +x.upd, del: +x.del, bytes: +x.bytes }]))
  }
  const commandStats = async () => {
    const info = await counter.info('commandstats')
    const out = new Map<string, number>()
    for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) out.set(m[1]!, Number(m[2]))
    return out
  }
  const minus = (a: Map<string, number>, b: Map<string, number>): Map<string, number> =>
    new Map([...a].map(([k, v]): [string, number] => [k, v - (b.get(k) ?? 0)]).filter(([, v]) => v > 0))
  // a backend flushes its counters at most once a second while busy, and within 10 s once idle
  const statsSettled = () => new Promise((r) => setTimeout(r, 11_000))

  // warm-up: every code path loaded, the payer's balance cached, one settlement done
  await pay(50)
  await allSettled()

  // the idle worker's own Redis traffic (schedulers, BullMQ polling), per ms
  const idle0 = await commandStats()
  await new Promise((r) => setTimeout(r, IDLE_MS))
  const idle = minus(await commandStats(), idle0)

  await statsSettled()
  const pg0 = await tableStats()
  const r0 = await commandStats()
  const block0 = await chain.getBlockNumber()
  const t0 = performance.now()
  const ok = await pay(calls)
  const servedMs = performance.now() - t0
  await allSettled()
  const wallMs = performance.now() - t0
  const r1 = await commandStats()
  await statsSettled()
  const pg1 = await tableStats()

  // settlement gas: every transaction the relayer sent after the warm-up
  const block1 = await chain.getBlockNumber()
  let gas = 0n
  let txs = 0
  for (let b = block0 + 1n; b <= block1; b++) {
    const block = await chain.getBlock({ blockNumber: b, includeTransactions: true })
    for (const tx of block.transactions) {
      if (tx.from.toLowerCase() !== devnet.accounts.relayer.address.toLowerCase()) continue
      gas += (await chain.getTransactionReceipt({ hash: tx.hash })).gasUsed
      txs++
    }
  }

  const perCall = (n: number) => (n / ok).toFixed(2)
  const lines: string[] = []
  lines.push(
    `bench:capacity — ${ok} of ${calls} paid calls answered 200 at ${concurrency} in flight, ` +
      `${(ok / (servedMs / 1000)).toFixed(0)} calls/s served, all settled ${(wallMs / 1000).toFixed(1)} s after the first; ` +
      `load average ${loadAtStart} at start, ${load()} at end`,
  )
  lines.push(
    '',
    '| Postgres table | inserted / call | updated / call | deleted / call | bytes / call |',
    '|---|---:|---:|---:|---:|',
  )
  let rowsW = 0
  let bytes = 0
  for (const [table, after] of [...pg1].sort()) {
    const before = pg0.get(table) ?? { ins: 0, upd: 0, del: 0, bytes: 0 }
    const d = {
      ins: after.ins - before.ins,
      upd: after.upd - before.upd,
      del: after.del - before.del,
      bytes: after.bytes - before.bytes,
    }
    if (d.ins + d.upd + d.del === 0 && d.bytes === 0) continue
    rowsW += d.ins + d.upd + d.del
    bytes += d.bytes
    lines.push(`| ${table} | ${perCall(d.ins)} | ${perCall(d.upd)} | ${perCall(d.del)} | ${perCall(d.bytes)} |`)
  }
  lines.push(`| **all** | | | **${perCall(rowsW)} row writes** | **${perCall(bytes)}** |`)
  const redisDelta = minus(r1, r0)
  lines.push('', '| Redis command | calls / paid call | of it the idle worker |', '|---|---:|---:|')
  let redisAll = 0
  let redisIdle = 0
  for (const [cmd, n] of [...redisDelta].sort((a, b) => b[1] - a[1])) {
    const idleShare = ((idle.get(cmd) ?? 0) / IDLE_MS) * wallMs
    redisAll += n
    redisIdle += idleShare
    if (n / ok >= 0.01) lines.push(`| ${cmd} | ${perCall(n)} | ${perCall(idleShare)} |`)
  }
  lines.push(`| **all** | **${perCall(redisAll)}** | ${perCall(redisIdle)} |`)
  lines.push(
    '',
    `Redis commands per paid call, less the idle worker's: ${perCall(redisAll - redisIdle)}. ` +
      `Settlement: ${txs} transaction(s), ${gas} gas, ${(Number(gas) / ok).toFixed(0)} gas per paid call ` +
      `(SETTLEMENT_BATCH_SIZE ${config.settlement.batchSize}, window ${config.settlement.batchWindowMs} ms).`,
  )
  console.log(lines.join('\n'))
} finally {
  for (const stop of stops.reverse()) await Promise.resolve(stop()).catch(() => {})
}

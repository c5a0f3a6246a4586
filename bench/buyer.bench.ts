/**
 * Buyer-side signing throughput, all in one run (`npm run bench:buyer`):
 *   local signing      signExact + header in-process with the buyer's own key (the baseline)
 *   platform-signed    POST /v1/agent/payments over HTTP: agent-key auth (cached look-up),
 *                      Redis cap + unsettled-balance reservation (per-transaction, daily,
 *                      monthly caps set), custodial key (decrypted once per process), native
 *                      secp256k1 signature, group-committed reservation insert
 * The platform cases are measured at full load (autocannon, closed loop) and at a fixed 1,000
 * payments/s (open loop, bench/open-loop.ts: evenly spaced, latency counted from when each
 * request was due). "Added latency" is what an agent waits for the platform instead of signing
 * locally. Nothing is asserted.
 *
 *   npm run bench:buyer -- [seconds-per-case] [connections]   (node with the V8 flags the Procfile runs web with)
 *   BENCH_RATE_RUNS=<n>: how many 1,000/s runs (default 3; each is reported, with the median p99)
 *   BENCH_PROFILE=<dir>: a CPU profile of each platform case's measured window
 */
import { randomBytes } from 'node:crypto'
import os from 'node:os'
import autocannon from 'autocannon'
import { sql } from 'kysely'
import { privateKeyToAccount } from 'viem/accounts'
import { mintUsdc, startDevnet } from '../src/chain/devnet.js'
import { parseChallenge } from '../src/client/challenge.js'
import { paymentHeader, signExact } from '../src/client/sign-exact.js'
import { loadConfig } from '../src/config.js'
import { createDb } from '../src/db/create-db.js'
import { migrateToLatest } from '../src/db/migrate.js'
import { createDeps } from '../src/deps.js'
import { buildWebApp } from '../src/http/web-app.js'
import { createAgentKeys } from '../src/services/accounts/agent-keys.js'
import { createAgents } from '../src/services/accounts/agents.js'
import { createUsers } from '../src/services/accounts/users.js'
import { buildChallenge } from '../src/x402/challenge.js'
import { dropRedisPrefix } from './cleanup.js'
import { openLoop, percentile } from './open-loop.js'
import { profiled } from './profile.js'

const seconds = Number(process.argv[2] ?? 5)
const connections = Number(process.argv[3] ?? 16)

const devnet = await startDevnet({ port: 0 })
const schema = `bench_buyer_${Date.now().toString(36)}`
const masterKey = randomBytes(32).toString('hex')
const config = loadConfig({
  DATABASE_URL: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
  DATABASE_SCHEMA: schema,
  REDIS_PREFIX: `tgbench:${schema}`,
  RPC_URL: devnet.rpcUrl,
  PROXY_URL: 'http://127.0.0.1:45922',
  TOLLGATE_RECEIVER_ADDRESS: devnet.accounts.receiver.address,
  TOLLGATE_MASTER_KEY: masterKey,
  LOG_LEVEL: 'silent',
})
const migrationDb = createDb({ databaseUrl: config.databaseUrl, schema, max: 1 })
await migrateToLatest(migrationDb, schema)
await migrationDb.destroy()
const deps = createDeps(config)

const user = await createUsers({ db: deps.db }).create(`bench-${schema}@example.com`, 'correct horse battery')
const agents = createAgents({ db: deps.db, masterKey: () => Buffer.from(masterKey, 'hex') })
// caps enforced on every payment, but high enough that the run never hits them
const agent = await agents.create(user.id, {
  name: 'bench',
  spend_caps: { per_transaction: '10000', daily: '1000000000000', monthly: '1000000000000' },
})
const row = await agents.find(user.id, agent.address)
const key = await createAgentKeys({ db: deps.db, deployment: config.deployment }).create(
  { id: row.id, address: agent.address },
  'bench',
)
await mintUsdc(devnet.rpcUrl, agent.address as `0x${string}`, 1_000_000_000_000n)

const resourceUrl = `${config.proxyUrl}/tollgate/toolbox/echo`
const ch = buildChallenge({
  resourceUrl,
  description: 'echo',
  mimeType: 'application/json',
  payTo: devnet.accounts.receiver.address,
  amount: 1000n,
  maxTimeoutSeconds: 60,
  chain: config.chain,
  method: 'GET',
})
const body = JSON.stringify({ url: resourceUrl, method: 'GET', challenge: ch.v2HeaderValue })

const web = await buildWebApp(deps, { logger: false })
// time inside the server (Fastify's onRequest to onResponse) of the payments measured at a fixed rate
let serverTimes: number[] | undefined
web.addHook('onResponse', (request, reply, done) => {
  if (serverTimes && request.url === '/v1/agent/payments') serverTimes.push(reply.elapsedTime)
  done()
})
await web.listen({ port: 0, host: '127.0.0.1' })
const webUrl = `http://127.0.0.1:${(web.server.address() as { port: number }).port}`

interface Row {
  name: string
  rps: number
  p50: number
  p99: number
  errors: number
}
const rows: Row[] = []

// local signing baseline: sequential, in-process
{
  const pk = `0x${randomBytes(32).toString('hex')}` as const
  const from = privateKeyToAccount(pk).address
  const keyBytes = Buffer.from(pk.slice(2), 'hex')
  const parsed = parseChallenge(ch.v2HeaderValue)
  const req = parsed.accepts[0]!
  const lat: number[] = []
  const end = performance.now() + seconds * 1000
  while (performance.now() < end) {
    const t0 = performance.now()
    paymentHeader(
      parsed,
      req,
      signExact(
        keyBytes,
        from,
        {
          chainId: req.chainId!,
          asset: req.asset,
          token: req.extra!,
          payTo: req.payTo,
          amount: req.amount,
          maxTimeoutSeconds: req.maxTimeoutSeconds,
        },
        Math.floor(Date.now() / 1000),
      ),
    )
    lat.push(performance.now() - t0)
  }
  lat.sort((a, b) => a - b)
  const q = (p: number) => Number(lat[Math.floor((lat.length - 1) * p)]!.toFixed(3))
  rows.push({
    name: 'local signing (1 thread, in-process)',
    rps: lat.length / seconds,
    p50: q(0.5),
    p99: q(0.99),
    errors: 0,
  })
}

const headers = { authorization: `Bearer ${key.secret}`, 'content-type': 'application/json' }
function report(row: Row): Row {
  process.stderr.write(
    `${row.name}: ${Math.round(row.rps)} payments/s, p50 ${row.p50} ms, p99 ${row.p99} ms${row.errors ? `, ${row.errors} errors` : ''}\n`,
  )
  return row
}
// closed loop: each connection sends its next request when the last one answered (throughput)
async function fullLoad(name: string): Promise<Row> {
  const r = await profiled(name, () =>
    autocannon({ url: `${webUrl}/v1/agent/payments`, method: 'POST', headers, body, connections, duration: seconds }),
  )
  return report({ name, rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, errors: r.non2xx + r.errors })
}
// open loop: evenly spaced requests at a fixed rate from another process, latency from when each was due
async function atRate(name: string, rate: number): Promise<Row> {
  serverTimes = []
  const r = await profiled(name, () =>
    openLoop({ url: `${webUrl}/v1/agent/payments`, method: 'POST', headers, body, rate, seconds }),
  )
  const inServer = serverTimes.sort((a, b) => a - b)
  serverTimes = undefined
  const q = (p: number) => percentile(inServer, p).toFixed(2)
  process.stderr.write(
    `  open loop: sent ${r.sent}; send to answer p999 ${r.p999} ms, max ${r.max} ms; from due time p50 ${r.fromDue.p50} ms, p99 ${r.fromDue.p99} ms; inside the server (onRequest to onResponse, incl. warm-up) p50 ${q(0.5)} ms, p99 ${q(0.99)} ms, max ${q(1)} ms; generator stall max ${r.generatorStallMs} ms, CPU ${r.generatorCpuUsPerRequest} µs/request, ${r.waitedForConnection} waited for a connection\n`,
  )
  return report({ name, rps: r.rps, p50: r.p50, p99: r.p99, errors: r.non2xx + r.errors })
}
// warm up (JIT, pools, balance cache, counters)
await autocannon({ url: `${webUrl}/v1/agent/payments`, method: 'POST', headers, body, connections: 4, amount: 500 })
rows.push(await fullLoad(`platform-signed, full load (${connections} connections)`))
// the machine's own floor at that rate: the same generator against /healthz of the same server
const floor = await openLoop({ url: `${webUrl}/healthz`, rate: 1000, seconds })
process.stderr.write(
  `  open loop: sent ${floor.sent}; send to answer p999 ${floor.p999} ms, max ${floor.max} ms; generator CPU ${floor.generatorCpuUsPerRequest} µs/request\n`,
)
const baseline1000 = report({
  name: 'baseline: GET /healthz at 1,000/s (open loop)',
  rps: floor.rps,
  p50: floor.p50,
  p99: floor.p99,
  errors: floor.non2xx + floor.errors,
})
rows.push(baseline1000)
// the 1,000/s tail is set by a few stalls per run on a shared 2-core machine, so it is measured
// several times (BENCH_RATE_RUNS, default 3) and every run is reported
const rateRuns = Math.max(1, Number(process.env.BENCH_RATE_RUNS ?? 3))
const atRateRows: Row[] = []
for (let i = 1; i <= rateRuns; i++)
  atRateRows.push(await atRate(`platform-signed at 1,000 payments/s (open loop), run ${i} of ${rateRuns}`, 1000))
rows.push(...atRateRows)

const signed = await deps.db
  .selectFrom('agent_payments')
  .select((eb) => eb.fn.countAll<string>().as('n'))
  .executeTakeFirstOrThrow()
console.log(
  `\n${seconds} s per case, node ${process.version}, ${os.cpus().length} cores; ${signed.n} reservations recorded\n`,
)
console.log('| case | payments/s | p50 ms | p99 ms | errors |')
console.log('|---|---:|---:|---:|---:|')
for (const r of rows) console.log(`| ${r.name} | ${Math.round(r.rps)} | ${r.p50} | ${r.p99} | ${r.errors} |`)
const local = rows[0]!
const added = atRateRows.map((r) => ({ p50: r.p50 - local.p50, p99: r.p99 - local.p99 }))
const median = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor((a.length - 1) / 2)]!
console.log(
  `\nadded latency vs local signing at 1,000/s, per run: p50 ${added.map((a) => `+${a.p50.toFixed(2)}`).join(' / ')} ms, p99 ${added.map((a) => `+${a.p99.toFixed(2)}`).join(' / ')} ms (median p99 +${median(added.map((a) => a.p99)).toFixed(2)} ms; under 10 ms in ${added.filter((a) => a.p99 < 10).length} of ${added.length} runs)`,
)
console.log(
  `the same generator against /healthz at 1,000/s: p50 ${baseline1000.p50} ms, p99 ${baseline1000.p99} ms (what the machine and the HTTP round trip alone cost)`,
)
console.log(`full-load throughput ${((rows[1]!.rps / local.rps) * 100).toFixed(1)}% of local signing`)

await web.close()
await sql`drop schema ${sql.id(schema)} cascade`.execute(deps.db)
await dropRedisPrefix(deps.redis, config.redisPrefix)
await deps.close()
await devnet.stop()

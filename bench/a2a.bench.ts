/**
 * Paid calls over A2A vs over HTTP, to the same hosted handler (the `echo` fixture), in one run on
 * this machine (`npm run bench:a2a`):
 *   http   POST /tollgate/toolbox/echo, the payment in PAYMENT-SIGNATURE
 *   a2a    POST /tollgate/toolbox/a2a, a JSON-RPC message/send naming the `echo` skill with its
 *          input as a data part and the payment in the message's x402.payment.payload
 * Each request carries its own pre-signed payment, so a paid message is one request (a buyer that
 * knows the price pays in the first message; the input-required round trip is not measured). The
 * route's direct path answers such a message; a second proxy (`a2aDirect: false`) answers it with
 * the official SDK's request handler, as a third case. Prints calls/s, p50/p99, CPU per call (this
 * process and the handler processes) and each A2A case's ratio against HTTP, per round
 * (BENCH_ROUNDS, default 1, the cases taking turns to go first). Nothing is asserted.
 *
 *   node --import tsx bench/a2a.bench.ts [seconds-per-case] [connections]
 */
import { randomBytes } from 'node:crypto'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import autocannon from 'autocannon'
import { sql } from 'kysely'
import { startDevnet } from '../src/chain/devnet.js'
import { assertNativeSecp256k1 } from '../src/chain/recover-signer.js'
import { loadConfig } from '../src/config.js'
import { createDb } from '../src/db/create-db.js'
import { migrateToLatest } from '../src/db/migrate.js'
import { createDeps } from '../src/deps.js'
import { buildProxyApp } from '../src/http/proxy-app.js'
import { loadHandlerRegistry } from '../src/pool/handler-registry.js'
import { seedHostedServices } from '../src/services/hosted-seed.js'
import { childrenCpuUs, exactPayments } from './bench-payments.js'
import { dropRedisPrefix } from './cleanup.js'
import { profiled } from './profile.js'

assertNativeSecp256k1()
const seconds = Number(process.argv[2] ?? 3)
const connections = Number(process.argv[3] ?? 16)
const rounds = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 1))
const here = path.dirname(fileURLToPath(import.meta.url))

const devnet = await startDevnet({ port: 0 })
const schema = `bench_${Date.now().toString(36)}`
const env = {
  DATABASE_URL: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
  DATABASE_SCHEMA: schema,
  REDIS_PREFIX: `tgbench:${schema}`,
  RPC_URL: devnet.rpcUrl,
  PROXY_URL: 'http://127.0.0.1:45937',
  TOLLGATE_RECEIVER_ADDRESS: devnet.accounts.receiver.address,
  LOG_LEVEL: 'silent',
  TOLLGATE_MASTER_KEY: randomBytes(32).toString('hex'),
}
const config = loadConfig(env)
const migrationDb = createDb({ databaseUrl: config.databaseUrl, schema, max: 1 })
await migrateToLatest(migrationDb, schema)
await migrationDb.destroy()
const deps = createDeps(config)
const fixtures = path.resolve(here, '../test/fixtures/handlers')
await seedHostedServices(deps, await loadHandlerRegistry(fixtures))
const proxy = await buildProxyApp(deps, { logger: false, handlersDir: fixtures })
await proxy.listen({ port: 45937, host: '127.0.0.1' })
// the same, every A2A message through the SDK's DefaultRequestHandler
const sdkProxy = await buildProxyApp(deps, { logger: false, handlersDir: fixtures, a2aDirect: false })
await sdkProxy.listen({ port: 45938, host: '127.0.0.1' })

const httpUrl = `${config.proxyUrl}/tollgate/toolbox/echo`
const a2aUrl = `${config.proxyUrl}/tollgate/toolbox/a2a`
const args = { msg: 'hello', n: 3 }
const a2aHeaders = {
  'content-type': 'application/json',
  'x-a2a-extensions': 'https://github.com/google-a2a/a2a-x402/v0.1',
}
const message = (id: number, payment?: unknown) =>
  JSON.stringify({
    jsonrpc: '2.0',
    id,
    method: 'message/send',
    params: {
      message: {
        kind: 'message',
        messageId: `m-${id}`,
        role: 'user',
        parts: [{ kind: 'data', data: args }],
        metadata: { skill: 'echo', ...(payment ? { 'x402.payment.payload': payment } : {}) },
      },
    },
  })

// the PaymentRequired as the agent gives it (the POST challenge: the same requirement HTTP POST offers)
const unpaid = await (await fetch(a2aUrl, { method: 'POST', headers: a2aHeaders, body: message(0) })).json()
const required = unpaid.result.status.message.metadata['x402.payment.required'] as {
  resource: unknown
  accepts: Array<{ payTo: string; amount: string }>
}

/** `count` v2 PaymentPayloads from the demo payer, each with its own nonce. */
const payments = (count: number) => exactPayments(devnet.accounts.demoPayer, config.chain, required, count)

interface Row {
  name: string
  rps: number
  p50: number
  p99: number
  cpuUs: number
  failed: number
}

type Case = {
  name: string
  url: string
  request: (p: object, i: number) => { headers: Record<string, string>; body: string }
}
type Kind = 'http' | 'a2a' | 'a2aSdk'
const cases: Record<Kind, Case> = {
  http: {
    name: 'paid HTTP call (echo)',
    url: httpUrl,
    request: (p) => ({
      headers: {
        'content-type': 'application/json',
        'payment-signature': Buffer.from(JSON.stringify(p)).toString('base64'),
      },
      body: JSON.stringify(args),
    }),
  },
  a2a: {
    name: 'paid A2A message/send (echo)',
    url: a2aUrl,
    request: (p, i) => ({ headers: a2aHeaders, body: message(i + 1, p) }),
  },
  a2aSdk: {
    name: 'paid A2A message/send (echo), SDK handler',
    url: 'http://127.0.0.1:45938/tollgate/toolbox/a2a',
    request: (p, i) => ({ headers: a2aHeaders, body: message(i + 1, p) }),
  },
}

async function run(c: Case): Promise<Row> {
  const ps = payments(Math.ceil(seconds * 5000))
  let i = 0
  let failed = 0
  const cpu0 = process.cpuUsage()
  const children0 = childrenCpuUs()
  const result = await profiled(c.name, () =>
    autocannon({
      url: c.url,
      method: 'POST',
      connections,
      duration: seconds,
      requests: [
        {
          setupRequest: (req: autocannon.Request) => {
            const n = i++
            return { ...req, method: 'POST', ...c.request(ps[n % ps.length]!, n) }
          },
          // a failed task is HTTP 200 all the same: count anything but a completed task (or an HTTP answer) as a failure
          onResponse: (status: number, body: string) => {
            if (status !== 200 || body.includes('"state":"failed"') || body.includes('"error":{')) failed++
          },
        },
      ],
    }),
  )
  const ok = result['2xx'] - failed
  const cpu = process.cpuUsage(cpu0)
  const row = {
    name: c.name,
    rps: ok / (result.duration || seconds),
    p50: result.latency.p50,
    p99: result.latency.p99,
    cpuUs: (cpu.user + cpu.system + childrenCpuUs() - children0) / Math.max(1, ok),
    failed: failed + result.non2xx,
  }
  process.stderr.write(
    `${c.name}: ${Math.round(row.rps)} calls/s, p50 ${row.p50} ms, p99 ${row.p99} ms, ${Math.round(row.cpuUs)} µs CPU/call${row.failed ? `, ${row.failed} failed` : ''}\n`,
  )
  if (i > ps.length)
    process.stderr.write(
      `  warning: payments reused (${i} requests, ${ps.length} payments); reused ones were refused\n`,
    )
  return row
}

// warm-up: JIT, the handler processes, the payer's balance cache; and a check that both paths pay
for (const c of Object.values(cases)) {
  const [p] = payments(1)
  const res = await fetch(c.url, { method: 'POST', ...c.request(p!, 0) })
  const text = await res.text()
  if (res.status !== 200 || text.includes('"state":"failed"') || text.includes('"error":{'))
    throw new Error(`${c.name} does not pay: ${res.status} ${text.slice(0, 300)}`)
}
await run({ ...cases.http, name: 'warm-up (http)' })
await run({ ...cases.a2a, name: 'warm-up (a2a)' })
await run({ ...cases.a2aSdk, name: 'warm-up (a2a, SDK handler)' })

const pairs: Array<Record<Kind, Row>> = []
const kinds: Kind[] = ['http', 'a2a', 'a2aSdk']
for (let r = 0; r < rounds; r++) {
  // the cases take turns going first, so none always runs on a warmer machine
  const order = [...kinds.slice(r % 3), ...kinds.slice(0, r % 3)]
  const got: Partial<Record<Kind, Row>> = {}
  for (const k of order) got[k] = await run(cases[k])
  pairs.push(got as Record<Kind, Row>)
}

console.log(
  `\n${seconds} s per case, ${connections} connections, ${rounds} rounds, node ${process.version}, ${os.cpus().length} cores, load average ${os
    .loadavg()
    .map((x) => x.toFixed(1))
    .join(' ')}\n`,
)
console.log(
  '| round | case | calls/s | p50 ms | p99 ms | CPU µs/call (bench process + handler processes) | A2A vs HTTP |',
)
console.log('|---:|---|---:|---:|---:|---:|---:|')
for (const [n, { http, a2a, a2aSdk }] of pairs.entries()) {
  for (const row of [http, a2a, a2aSdk]) {
    console.log(
      `| ${n + 1} | ${row.name} | ${Math.round(row.rps)} | ${row.p50} | ${row.p99} | ${Math.round(row.cpuUs)} | ${row === http ? '' : `${((row.rps / http.rps) * 100).toFixed(1)}%`} |${row.failed ? ` ${row.failed} failed` : ''}`,
    )
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!
for (const k of ['a2a', 'a2aSdk'] as const)
  console.log(
    `\n${cases[k].name}: median A2A/HTTP calls/s ratio ${(median(pairs.map((p) => p[k].rps / p.http.rps)) * 100).toFixed(1)}%, median extra CPU per A2A call ${Math.round(median(pairs.map((p) => p[k].cpuUs - p.http.cpuUs)))} µs`,
  )

await proxy.close()
await sdkProxy.close()
await sql`drop schema ${sql.id(schema)} cascade`.execute(deps.db)
await dropRedisPrefix(deps.redis, config.redisPrefix)
await deps.close()
await devnet.stop()

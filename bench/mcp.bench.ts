/**
 * Paid calls over MCP vs over HTTP, to the same hosted handler (the `echo` fixture), in one run on
 * this machine (`npm run bench:mcp`):
 *   http   POST /tollgate/toolbox/echo, the payment in PAYMENT-SIGNATURE
 *   mcp    POST /tollgate/toolbox/mcp, a JSON-RPC tools/call of `echo`, the payment in _meta["x402/payment"]
 *   mcp-sdk the same tools/call to a second proxy in this process answering every MCP message
 *          through a server and transport of the SDK's (mcpDirect: false), as before the direct path
 * Each request carries its own pre-signed payment. The MCP server is stateless: a client sends
 * tools/call without a session. Prints calls/s, p50/p99, CPU per call (this process and the handler
 * processes) and each MCP case's ratio against HTTP, per round (BENCH_ROUNDS, default 2, the order
 * of the cases turning each round). Nothing is asserted.
 *
 *   node --import tsx bench/mcp.bench.ts [seconds-per-case] [connections]
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
const seconds = Number(process.argv[2] ?? 5)
const connections = Number(process.argv[3] ?? 32)
const rounds = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 2))
const here = path.dirname(fileURLToPath(import.meta.url))

const devnet = await startDevnet({ port: 0 })
const schema = `bench_${Date.now().toString(36)}`
const env = {
  DATABASE_URL: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
  DATABASE_SCHEMA: schema,
  REDIS_PREFIX: `tgbench:${schema}`,
  RPC_URL: devnet.rpcUrl,
  PROXY_URL: 'http://127.0.0.1:45931',
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
await proxy.listen({ port: 45931, host: '127.0.0.1' })
// the same platform, every MCP message through the SDK's Server (the path before the direct one)
const sdkProxy = await buildProxyApp(deps, { logger: false, handlersDir: fixtures, mcpDirect: false })
await sdkProxy.listen({ port: 45932, host: '127.0.0.1' })

const httpUrl = `${config.proxyUrl}/tollgate/toolbox/echo`
const mcpUrl = `${config.proxyUrl}/tollgate/toolbox/mcp`
const mcpSdkUrl = 'http://127.0.0.1:45932/tollgate/toolbox/mcp'
const args = { msg: 'hello', n: 3 }
const mcpHeaders = {
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
  'mcp-protocol-version': '2025-06-18',
}
const toolCall = (id: number, payment?: unknown) =>
  JSON.stringify({
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params: { name: 'echo', arguments: args, ...(payment ? { _meta: { 'x402/payment': payment } } : {}) },
  })

// the PaymentRequired as the MCP server gives it (the POST challenge: the same requirement HTTP POST offers)
const unpaid = await (await fetch(mcpUrl, { method: 'POST', headers: mcpHeaders, body: toolCall(0) })).json()
const required = unpaid.result.structuredContent as {
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
type Key = 'http' | 'mcp' | 'mcpSdk'
const cases: Record<Key, Case> = {
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
  mcp: {
    name: 'paid MCP tools/call (echo)',
    url: mcpUrl,
    request: (p, i) => ({ headers: mcpHeaders, body: toolCall(i + 1, p) }),
  },
  mcpSdk: {
    name: 'paid MCP tools/call, SDK server per message (echo)',
    url: mcpSdkUrl,
    request: (p, i) => ({ headers: mcpHeaders, body: toolCall(i + 1, p) }),
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
          // a tool result with isError is HTTP 200 all the same: count it as a failure
          onResponse: (status: number, body: string) => {
            if (status !== 200 || body.includes('"isError":true')) failed++
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

// warm-up: JIT, the handler processes, the payer's balance cache; and a check that every path pays
for (const c of Object.values(cases)) {
  const [p] = payments(1)
  const res = await fetch(c.url, { method: 'POST', ...c.request(p!, 0) })
  const text = await res.text()
  if (res.status !== 200 || text.includes('"isError":true'))
    throw new Error(`${c.name} does not pay: ${res.status} ${text.slice(0, 300)}`)
}
await run({ ...cases.http, name: 'warm-up (http)' })
await run({ ...cases.mcp, name: 'warm-up (mcp)' })
await run({ ...cases.mcpSdk, name: 'warm-up (mcp-sdk)' })

const keys: Key[] = ['http', 'mcp', 'mcpSdk']
const pairs: Array<Record<Key, Row>> = []
for (let r = 0; r < rounds; r++) {
  // the cases take turns going first, so none always runs on a warmer machine
  const order = [...keys.slice(r % keys.length), ...keys.slice(0, r % keys.length)]
  const got: Partial<Record<Key, Row>> = {}
  for (const k of order) got[k] = await run(cases[k])
  pairs.push(got as Record<Key, Row>)
}

console.log(
  `\n${seconds} s per case, ${connections} connections, ${rounds} rounds, node ${process.version}, ${os.cpus().length} cores, load average ${os
    .loadavg()
    .map((x) => x.toFixed(1))
    .join(' ')}\n`,
)
console.log(
  '| round | case | calls/s | p50 ms | p99 ms | CPU µs/call (bench process + handler processes) | MCP vs HTTP |',
)
console.log('|---:|---|---:|---:|---:|---:|---:|')
for (const [n, { http, mcp, mcpSdk }] of pairs.entries()) {
  for (const row of [http, mcp, mcpSdk]) {
    console.log(
      `| ${n + 1} | ${row.name} | ${Math.round(row.rps)} | ${row.p50} | ${row.p99} | ${Math.round(row.cpuUs)} | ${row === http ? '' : `${((row.rps / http.rps) * 100).toFixed(1)}%`} |${row.failed ? ` ${row.failed} failed` : ''}`,
    )
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!
console.log(
  `\nmedian MCP/HTTP calls/s ratio ${(median(pairs.map((p) => p.mcp.rps / p.http.rps)) * 100).toFixed(1)}%, median extra CPU per MCP call ${Math.round(median(pairs.map((p) => p.mcp.cpuUs - p.http.cpuUs)))} µs`,
)
console.log(
  `SDK server per message: median MCP/HTTP calls/s ratio ${(median(pairs.map((p) => p.mcpSdk.rps / p.http.rps)) * 100).toFixed(1)}%, median extra CPU per MCP call ${Math.round(median(pairs.map((p) => p.mcpSdk.cpuUs - p.http.cpuUs)))} µs`,
)

await sdkProxy.close()
await proxy.close()
await sql`drop schema ${sql.id(schema)} cascade`.execute(deps.db)
await dropRedisPrefix(deps.redis, config.redisPrefix)
await deps.close()
await devnet.stop()

/**
 * Settlement through the whole worker path, on a fresh devnet, Postgres schema and Redis prefix:
 *
 * 1. Payments settled per second by one settler (claim, authorizationState, simulation, sign,
 *    record, send, receipt, Postgres transitions) for batch sizes 1, 10, 50, 200, against one
 *    plain `transferWithAuthorization` transaction per payment (send + receipt, no bookkeeping)
 *    measured in the same run.
 * 2. Sustained paid load through the proxy (pre-signed v2 payments, open loop at a fixed rate)
 *    with one worker process (`src/start/worker.ts`, default batching) settling, sampling the age
 *    of the oldest payment not yet settled every 250 ms. Target: never older than 10 s.
 *
 *   node --import tsx bench/settle-worker.bench.ts [sustained-seconds=60] [calls-per-second=40]
 */
import { spawn } from 'node:child_process'
import { randomBytes, randomUUID } from 'node:crypto'
import { loadavg } from 'node:os'
import { fileURLToPath } from 'node:url'
import { sql } from 'kysely'
import { Agent, request } from 'undici'
import { createPublicClient, createWalletClient, getAddress, http, type Hex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { startDevnet } from '../src/chain/devnet.js'
import { eip3009Types } from '../src/chain/usdc-abi.js'
import { loadConfig } from '../src/config.js'
import { createDb } from '../src/db/create-db.js'
import { migrateToLatest } from '../src/db/migrate.js'
import { createDeps } from '../src/deps.js'
import { buildProxyApp } from '../src/http/proxy-app.js'
import { loadHandlerRegistry } from '../src/pool/handler-registry.js'
import { seedHostedServices } from '../src/services/hosted-seed.js'
import { transferCallData } from '../src/services/settlement/chain-ops.js'
import { createSettler } from '../src/services/settlement/settler.js'
import type { NewPayment, Payment } from '../src/db/database.js'
import { decodeRequired, signFor, v2Header } from '../test/helpers/pay.js'

const sustainedS = Number(process.argv[2] ?? 60)
const rate = Number(process.argv[3] ?? 40)
const repo = fileURLToPath(new URL('..', import.meta.url))
const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')
const loadAtStart = load()

const devnet = await startDevnet({ port: 0 })
const schema = `bench_settle_${Date.now().toString(36)}`
const proxyPort = 45000 + Math.floor(Math.random() * 1000)
const env = {
  DATABASE_URL: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
  REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
  DATABASE_SCHEMA: schema,
  REDIS_PREFIX: `tgbench:${schema}`,
  RPC_URL: devnet.rpcUrl,
  PROXY_URL: `http://127.0.0.1:${proxyPort}`,
  TOLLGATE_RECEIVER_ADDRESS: devnet.accounts.receiver.address,
  // one relayer: one worker's throughput
  RELAYER_PRIVATE_KEYS: devnet.accounts.relayer.privateKey,
  LOG_LEVEL: 'silent',
}
const config = loadConfig(env)
const migrationDb = createDb({ databaseUrl: config.databaseUrl, schema, max: 1 })
await migrateToLatest(migrationDb, schema)
await migrationDb.destroy()
const deps = createDeps(config)
const db = deps.db
const payer = privateKeyToAccount(devnet.accounts.demoPayer.privateKey)
const usdc = getAddress(devnet.usdcAddress)

/** A served payment row with a real authorization, as the proxy leaves it. */
async function servedPayment(): Promise<NewPayment> {
  const nonce = `0x${randomBytes(32).toString('hex')}` as Hex
  const validBefore = BigInt(Math.floor(Date.now() / 1000) + 3600)
  const signature = await payer.signTypedData({
    domain: {
      name: config.chain.usdc.name,
      version: config.chain.usdc.version,
      chainId: devnet.chainId,
      verifyingContract: usdc,
    },
    types: { TransferWithAuthorization: eip3009Types.TransferWithAuthorization },
    primaryType: 'TransferWithAuthorization',
    message: {
      from: payer.address,
      to: devnet.accounts.receiver.address,
      value: 1000n,
      validAfter: 0n,
      validBefore,
      nonce,
    },
  })
  return {
    id: randomUUID(),
    endpoint_id: null,
    resource: 'bench',
    method: 'GET',
    x402_version: 2,
    network: config.chain.caip2,
    asset: usdc.toLowerCase(),
    payer: payer.address.toLowerCase(),
    pay_to: devnet.accounts.receiver.address.toLowerCase(),
    value: '1000',
    valid_after: '0',
    valid_before: String(validBefore),
    nonce,
    signature,
    status: 'served',
  }
}

let proxy: Awaited<ReturnType<typeof buildProxyApp>> | undefined
let worker: ReturnType<typeof spawn> | undefined
try {
  // ---- 1. baseline: one plain transferWithAuthorization transaction per payment ----
  const client = createPublicClient({ transport: http(devnet.rpcUrl), chain: devnet.chain })
  const baselineWallet = createWalletClient({
    account: privateKeyToAccount(devnet.accounts.relayers[1]!.privateKey),
    transport: http(devnet.rpcUrl),
    chain: devnet.chain,
  })
  const singles = await Promise.all(Array.from({ length: 40 }, servedPayment))
  const b0 = performance.now()
  for (const p of singles) {
    const hash = await baselineWallet.sendTransaction({ to: usdc, data: transferCallData(p as unknown as Payment) })
    const r = await client.waitForTransactionReceipt({ hash, pollingInterval: 20 })
    if (r.status !== 'success') throw new Error('baseline transfer reverted')
  }
  const baselinePerS = singles.length / ((performance.now() - b0) / 1000)

  // ---- 1. the full settler per batch size ----
  const rows = [
    `| batch size | payments | batches | wall time | payments/s per worker | vs single tx |`,
    `|---|---:|---:|---:|---:|---:|`,
    `| single \`transferWithAuthorization\` (send + receipt, no bookkeeping) | ${singles.length} | | | ${baselinePerS.toFixed(0)} | 100% |`,
  ]
  for (const [size, count] of [
    [1, 40],
    [10, 300],
    [50, 1000],
    [200, 1000],
  ] as const) {
    const ps = await Promise.all(Array.from({ length: count }, servedPayment))
    for (let i = 0; i < ps.length; i += 500)
      await db
        .insertInto('payments')
        .values(ps.slice(i, i + 500))
        .execute()
    const settler = createSettler(deps, { batchSize: size })
    const t0 = performance.now()
    let settled = 0
    let batches = 0
    while (settled < count) {
      const s = await settler.runOnce(60_000)
      settled += s.settled
      batches += s.batches
      if (s.failed || s.requeued) throw new Error(`batch ${size}: ${JSON.stringify(s)}`)
    }
    const secs = (performance.now() - t0) / 1000
    const perS = count / secs
    rows.push(
      `| ${size} | ${count} | ${batches} | ${(secs * 1000).toFixed(0)} ms | ${perS.toFixed(0)} | ${((perS / baselinePerS) * 100).toFixed(0)}% |`,
    )
  }
  console.log(`load average at start: ${loadAtStart}\n`)
  console.log(rows.join('\n'))

  // ---- 2. sustained paid load through the proxy, one worker process ----
  await seedHostedServices(deps, await loadHandlerRegistry())
  proxy = await buildProxyApp(deps, { logger: false })
  await proxy.listen({ port: proxyPort, host: '127.0.0.1' })
  const url = `http://127.0.0.1:${proxyPort}/tollgate/toolbox/hash-generator?text=abc&algorithms=sha256`
  const first = await fetch(url)
  await first.arrayBuffer()
  const required = decodeRequired(first.headers.get('payment-required'))
  const total = Math.round(sustainedS * rate)
  const headers: string[] = []
  for (let i = 0; i < total; i++) headers.push(v2Header(required, await signFor(payer, required)))

  worker = spawn(process.execPath, ['--import', 'tsx', 'src/start/worker.ts'], {
    cwd: repo,
    env: { ...process.env, ...env, LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'ignore', 'inherit'],
  })
  const workerExit = new Promise<void>((resolve) => worker!.on('exit', () => resolve()))
  await new Promise((r) => setTimeout(r, 3000)) // the worker process starting (tsx)

  const agent = new Agent({ connections: 64, keepAliveTimeout: 30_000 })
  const statuses = new Map<number, number>()
  const inflight: Promise<void>[] = []
  const samples: number[] = []
  const oldest = async () => {
    const r = await sql<{
      age: string | null
    }>`select extract(epoch from now() - min(created_at))::text as age from payments where status in ('verified', 'served', 'settling')`.execute(
      db,
    )
    return Number(r.rows[0]?.age ?? 0)
  }
  const sampler = setInterval(() => void oldest().then((a) => samples.push(a)), 250)
  const l0 = performance.now()
  for (let i = 0; i < total; i++) {
    const due = l0 + (i * 1000) / rate
    const wait = due - performance.now()
    if (wait > 0) await new Promise((r) => setTimeout(r, wait))
    inflight.push(
      request(url, { dispatcher: agent, headers: { 'payment-signature': headers[i]! } })
        .then(async (res) => {
          await res.body.arrayBuffer()
          statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1)
        })
        .catch(() => void statuses.set(0, (statuses.get(0) ?? 0) + 1)),
    )
  }
  await Promise.all(inflight)
  const loadSecs = (performance.now() - l0) / 1000
  const loadDuring = load()
  const drain0 = performance.now()
  for (;;) {
    const open = await db
      .selectFrom('payments')
      .select(sql<string>`count(*)::text`.as('n'))
      .where('status', 'in', ['verified', 'served', 'settling'])
      .executeTakeFirstOrThrow()
    if (open.n === '0' || performance.now() - drain0 > 120_000) break
    await new Promise((r) => setTimeout(r, 100))
  }
  const drainMs = performance.now() - drain0
  clearInterval(sampler)
  await agent.close()
  const sorted = [...samples].sort((a, b) => a - b)
  const q = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? 0
  const served = statuses.get(200) ?? 0
  const counts = await db
    .selectFrom('payments')
    .select(['status', sql<string>`count(*)::text`.as('n')])
    .where('resource', '!=', 'bench')
    .groupBy('status')
    .execute()
  const batchRows = await sql<{
    n: string
    avg: string
  }>`select count(*)::text as n, coalesce(avg(size), 0)::text as avg from settlement_batches where created_at >= ${new Date(Date.now() - (loadSecs * 1000 + drainMs + 5000))}`.execute(
    db,
  )
  console.log(
    [
      '',
      `sustained: ${total} paid calls in ${loadSecs.toFixed(1)} s (${(total / loadSecs).toFixed(1)}/s offered), statuses ${JSON.stringify(Object.fromEntries(statuses))}, one worker process`,
      `payments: ${JSON.stringify(Object.fromEntries(counts.map((c) => [c.status, Number(c.n)])))}; batches during the run: ${batchRows.rows[0]!.n}, mean size ${Number(batchRows.rows[0]!.avg).toFixed(1)}`,
      `oldest unsettled payment age (samples every 250 ms, ${samples.length}): p50 ${q(0.5).toFixed(2)} s, p95 ${q(0.95).toFixed(2)} s, max ${(sorted.at(-1) ?? 0).toFixed(2)} s (target < 10 s: ${(sorted.at(-1) ?? 0) < 10 ? 'met' : 'NOT met'})`,
      `backlog drained ${drainMs.toFixed(0)} ms after the last call; served ${served}`,
      `load average: start ${loadAtStart}, end of load ${loadDuring}`,
    ].join('\n'),
  )
  worker.kill('SIGTERM')
  await workerExit
  worker = undefined
} finally {
  if (worker) worker.kill('SIGKILL')
  await proxy?.close()
  await sql`drop schema ${sql.id(schema)} cascade`.execute(db).catch(() => {})
  await deps.close()
  await devnet.stop()
}

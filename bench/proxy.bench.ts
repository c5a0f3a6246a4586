/**
 * Hot-path throughput, all in one run on this machine (`npm run bench:proxy`):
 *   bare Fastify hello world  (baseline)
 *   the 402 challenge path
 *   a paid call to a trivial hosted handler (in handler processes, as the proxy runs them)
 *   the same on the proxy's own worker threads (the pool before issue #22; case `threads`)
 *   a paid call forwarded to a local upstream (undici)
 *   a paid hosted call carrying an x402 `payment-identifier` (case `payid`, as tollgate/client sends)
 *   a paid hosted call on an endpoint with paid access, which grants it (case `access`)
 *   a call served on an x402 `sign-in-with-x` proof instead of a payment (case `signin`)
 * Prints requests/s, p50/p99, CPU per request (this process, its threads and its handler
 * processes), ratios against bare Fastify, and each case's CPU per call as a multiple of bare
 * Fastify's CPU per request in the same run (this process's, and the whole machine's). Nothing is asserted.
 *
 *   node --import tsx bench/proxy.bench.ts [seconds-per-case] [connections]
 *   BENCH_ROUNDS=3 ...   the main cases three times in turn, with each round's ratios and their medians
 *   BENCH_CASES=hosted,threads BENCH_ROUNDS=4 ...   the process boundary's cost, alternating
 */
import { randomBytes } from 'node:crypto'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import autocannon from 'autocannon'
import Fastify from 'fastify'
import { sql } from 'kysely'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { mintUsdc, startDevnet } from '../src/chain/devnet.js'
import { assertNativeSecp256k1 } from '../src/chain/recover-signer.js'
import { loadConfig } from '../src/config.js'
import { createDb } from '../src/db/create-db.js'
import { migrateToLatest } from '../src/db/migrate.js'
import { createDeps } from '../src/deps.js'
import { buildProxyApp } from '../src/http/proxy-app.js'
import { createThreadPool } from '../src/pool/thread-pool.js'
import { loadHandlerRegistry } from '../src/pool/handler-registry.js'
import { createUpstreamClient } from '../src/proxy/upstream.js'
import { seedHostedServices } from '../src/services/hosted-seed.js'
import { announceRegistryChange } from '../src/services/registry-events.js'
import { createRequire } from 'node:module'
import { keccak256 } from '../src/chain/keccak.js'
import { signInMessage } from '../src/x402/sign-in-with-x.js'
import { childrenCpuUs, exactPayments, machineBusyUs, processCpuUs, type ExactPayer } from './bench-payments.js'
import { dropRedisPrefix } from './cleanup.js'
import { profiled } from './profile.js'
import { startReferenceStack } from './reference-stack.js'

assertNativeSecp256k1()
const secp = createRequire(import.meta.url)('secp256k1') as {
  ecdsaSign(msg: Uint8Array, key: Uint8Array): { signature: Uint8Array; recid: number }
}
const seconds = Number(process.argv[2] ?? 5)
const connections = Number(process.argv[3] ?? 32)
const here = path.dirname(fileURLToPath(import.meta.url))

const devnet = await startDevnet({ port: 0 })
const schema = `bench_${Date.now().toString(36)}`
const env = {
  DATABASE_URL: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
  DATABASE_SCHEMA: schema,
  REDIS_PREFIX: `tgbench:${schema}`,
  RPC_URL: devnet.rpcUrl,
  PROXY_URL: 'http://127.0.0.1:45921',
  TOLLGATE_RECEIVER_ADDRESS: devnet.accounts.receiver.address,
  // the benchmark's upstream is on loopback, which the SSRF guard refuses by default
  TOLLGATE_ALLOW_PRIVATE_UPSTREAMS: 'true',
  LOG_LEVEL: 'silent',
  // as in production (a proxy without the key refuses seller endpoints whose settings it cannot read)
  TOLLGATE_MASTER_KEY: randomBytes(32).toString('hex'),
  // X402_RECOVERY_THREADS=0 compares recovery on the main thread
  ...(process.env.X402_RECOVERY_THREADS ? { X402_RECOVERY_THREADS: process.env.X402_RECOVERY_THREADS } : {}),
}
const config = loadConfig(env)
const migrationDb = createDb({ databaseUrl: config.databaseUrl, schema, max: 1 })
await migrateToLatest(migrationDb, schema)
await migrationDb.destroy()
const deps = createDeps(config)
const fixtures = path.resolve(here, '../test/fixtures/handlers')
await seedHostedServices(deps, await loadHandlerRegistry(fixtures))

// a local upstream published as tollgate/toolbox/upstream-echo
const upstream = Fastify()
upstream.get('/echo', async () => ({ ok: true }))
await upstream.listen({ port: 0, host: '127.0.0.1' })
const upstreamUrl = `http://127.0.0.1:${(upstream.server.address() as { port: number }).port}/echo`
const svc = await deps.db.selectFrom('services').select('id').where('name', '=', 'toolbox').executeTakeFirstOrThrow()
await deps.db
  .insertInto('endpoints')
  .values({
    service_id: svc.id,
    slug: 'upstream-echo',
    methods: ['GET'],
    price: 1000n,
    handler: null,
    upstream_url: upstreamUrl,
    upstream_config: null,
  })
  .execute()
// the echo handler again with paid access (x402 sign-in-with-x): cases `access` and `signin`
await deps.db
  .insertInto('endpoints')
  .values({
    service_id: svc.id,
    slug: 'echo-access',
    methods: ['GET'],
    price: 1000n,
    handler: 'echo',
    upstream_url: null,
    upstream_config: null,
    access_minutes: 60,
  })
  .execute()
await announceRegistryChange(deps)

const proxy = await buildProxyApp(deps, { logger: false, handlersDir: fixtures })
await proxy.listen({ port: 45921, host: '127.0.0.1' })
await proxy.ready()
// the same proxy with hosted handlers on its own worker threads, to compare (same config, so the
// same 402 resource URL; only the port differs)
const proxyThreads = await buildProxyApp(deps, {
  logger: false,
  handlersDir: fixtures,
  handlerPool: createThreadPool(config.handlers),
})
await proxyThreads.listen({ port: 45922, host: '127.0.0.1' })
const threadsUrl = 'http://127.0.0.1:45922'
const bare = Fastify()
bare.get('/', async () => ({ hello: 'world' }))
await bare.listen({ port: 0, host: '127.0.0.1' })
const bareUrl = `http://127.0.0.1:${(bare.server.address() as { port: number }).port}/`

// Pre-signed payments from the demo payer, one per request (each nonce is used once).
/** `count` v2 payment headers from the demo payer for the endpoint at `urlPath`, each with its own nonce. */
async function headersFor(urlPath: string, count: number): Promise<string[]> {
  const r = await fetch(urlPath.startsWith('http') ? urlPath : `${config.proxyUrl}${urlPath}`)
  const required = JSON.parse(Buffer.from(r.headers.get('payment-required')!, 'base64').toString())
  return exactPayments(devnet.accounts.demoPayer, config.chain, required, count).map((p) =>
    Buffer.from(JSON.stringify(p)).toString('base64'),
  )
}

/**
 * `count` payment headers for the reference stack from `payers` in turn (one payer per connection,
 * so concurrent settlements never come from one payer: what fails is the facilitator's, not ours).
 */
async function referenceHeaders(url: string, count: number, payers: ExactPayer[]): Promise<string[]> {
  const r = await fetch(url)
  const required = JSON.parse(Buffer.from(r.headers.get('payment-required')!, 'base64').toString())
  const each = payers.map((p) => exactPayments(p, config.chain, required, Math.ceil(count / payers.length)))
  return Array.from({ length: count }, (_, i) =>
    Buffer.from(JSON.stringify(each[i % payers.length]![Math.floor(i / payers.length)])).toString('base64'),
  )
}

/** The same payment headers, each carrying its own x402 `payment-identifier` (as tollgate/client sends). */
async function withPaymentIds(urlPath: string, count: number): Promise<string[]> {
  const r = await fetch(`${config.proxyUrl}${urlPath}`)
  const required = JSON.parse(Buffer.from(r.headers.get('payment-required')!, 'base64').toString())
  return exactPayments(devnet.accounts.demoPayer, config.chain, required, count).map((p) =>
    Buffer.from(
      JSON.stringify({
        ...p,
        extensions: {
          'payment-identifier': { info: { required: false, id: `pay_${randomBytes(16).toString('hex')}` } },
        },
      }),
    ).toString('base64'),
  )
}

/** `count` SIGN-IN-WITH-X proofs by the demo payer for the endpoint at `urlPath`, each with its own nonce. */
async function signInsFor(urlPath: string, count: number): Promise<string[]> {
  const r = await fetch(`${config.proxyUrl}${urlPath}`)
  const required = JSON.parse(Buffer.from(r.headers.get('payment-required')!, 'base64').toString())
  const ext = required.extensions['sign-in-with-x']
  const key = Buffer.from(devnet.accounts.demoPayer.privateKey.slice(2), 'hex')
  const out: string[] = []
  for (let i = 0; i < count; i++) {
    const unsigned = {
      domain: ext.info.domain,
      address: devnet.accounts.demoPayer.address,
      uri: ext.info.uri,
      version: ext.info.version,
      chainId: config.chain.caip2,
      type: 'eip191',
      nonce: randomBytes(16).toString('hex'),
      issuedAt: new Date().toISOString(),
      ...(ext.info.statement !== undefined ? { statement: ext.info.statement } : {}),
    }
    const message = Buffer.from(signInMessage({ ...unsigned, signature: '' }))
    const digest = keccak256(Buffer.concat([Buffer.from(`\x19Ethereum Signed Message:\n${message.length}`), message]))
    const { signature, recid } = secp.ecdsaSign(digest, key)
    const sig = `0x${Buffer.from(signature).toString('hex')}${(27 + recid).toString(16)}`
    out.push(Buffer.from(JSON.stringify({ ...unsigned, signature: sig })).toString('base64'))
  }
  return out
}

interface Row {
  name: string
  /** successful (2xx, or 402 for the challenge case) responses per second */
  rps: number
  p50: number
  p99: number
  non2xx: number
  /** CPU µs per successful response: this process (main thread, worker threads, autocannon) and its child processes (handler processes) */
  cpuUs: number
  /** the part of cpuUs spent in child processes */
  childUs: number
  /** the whole machine's busy CPU µs per successful response (/proc/stat): every process, the load generator included */
  machineUs: number
  /** Postgres (every backend) and Redis CPU µs per successful response */
  pgUs: number
  redisUs: number
}

async function run(
  name: string,
  url: string,
  headers?: string[],
  conns = connections,
  headerName = 'payment-signature',
): Promise<Row> {
  let i = 0
  const cpu0 = process.cpuUsage()
  const children0 = childrenCpuUs()
  const machine0 = machineBusyUs()
  const pg0 = processCpuUs('postgres')
  const redis0 = processCpuUs('redis-server')
  const result = await profiled(name, () =>
    autocannon({
      url,
      connections: conns,
      duration: seconds,
      requests: headers
        ? [
            {
              setupRequest: (req: autocannon.Request) => ({
                ...req,
                headers: { [headerName]: headers[i++ % headers.length]! },
              }),
            },
          ]
        : undefined,
    }),
  )
  const expected = name.startsWith('402') ? 402 : 200
  const non = result.non2xx - (expected === 402 ? result['4xx'] : 0)
  const ok = result['2xx'] + (expected === 402 ? result['4xx'] : 0)
  const cpu = process.cpuUsage(cpu0)
  const childUs = (childrenCpuUs() - children0) / Math.max(1, ok)
  const cpuUs = (cpu.user + cpu.system) / Math.max(1, ok) + childUs
  const per = (us: number) => us / Math.max(1, ok)
  const machineUs = per(machineBusyUs() - machine0)
  const pgUs = per(processCpuUs('postgres') - pg0)
  const redisUs = per(processCpuUs('redis-server') - redis0)
  const row = {
    name,
    rps: ok / (result.duration || seconds),
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: non,
    cpuUs,
    childUs,
    machineUs,
    pgUs,
    redisUs,
  }
  process.stderr.write(
    `${name}: ${Math.round(row.rps)} req/s, p50 ${row.p50} ms, p99 ${row.p99} ms, ${Math.round(cpuUs)} µs CPU/req here, ${Math.round(machineUs)} µs machine (Postgres ${Math.round(pgUs)}, Redis ${Math.round(redisUs)})${row.non2xx ? `, ${row.non2xx} unexpected statuses` : ''}\n`,
  )
  if (headers && i > headers.length)
    process.stderr.write(
      `  warning: ${name} reused payment headers (${i} requests, ${headers.length} headers); reused ones were refused\n`,
    )
  return row
}

// warm both pools and the payer's balance cache
const warm = await headersFor('/tollgate/toolbox/echo?msg=hi', 40)
for (const [n, h] of warm.entries())
  await fetch(`${n % 2 ? threadsUrl : config.proxyUrl}/tollgate/toolbox/echo?msg=hi`, {
    headers: { 'payment-signature': h },
  })

const perCase = Math.ceil(seconds * 6000)
const rows: Row[] = []
// BENCH_CASES=bare,challenge,hosted,threads,upstream,payid,access,signin,forward,reference picks cases (e.g. to profile one); default all
const only = process.env.BENCH_CASES?.split(',')
const want = (c: string) => !only || only.includes(c)
// BENCH_ROUNDS=N runs the four main cases N times in turn: a machine whose speed drifts from minute
// to minute (a shared VM) then gives each ratio N times against a baseline measured just before it
const rounds = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 1))
const roundRows: Row[][] = []
const hostedCase = async () =>
  run(
    'paid: hosted handler (handler processes)',
    `${config.proxyUrl}/tollgate/toolbox/echo?msg=hi`,
    await headersFor('/tollgate/toolbox/echo?msg=hi', perCase),
  )
const threadsCase = async () =>
  run(
    'paid: hosted handler (worker threads, before #22)',
    `${threadsUrl}/tollgate/toolbox/echo?msg=hi`,
    await headersFor('/tollgate/toolbox/echo?msg=hi', perCase),
  )
// the first measured case would otherwise also measure JIT warm-up and the handler processes' first imports
if (want('hosted')) await hostedCase()
if (want('threads')) await threadsCase()
for (let r = 0; r < rounds; r++) {
  if (rounds > 1) process.stderr.write(`round ${r + 1} of ${rounds}\n`)
  const these: Row[] = []
  if (want('bare')) these.push(await run('bare Fastify hello world', bareUrl))
  if (want('challenge')) these.push(await run('402 challenge', `${config.proxyUrl}/tollgate/toolbox/echo?msg=hi`))
  // processes and threads take turns going first, so neither always runs on a warmer machine
  const pair = [want('hosted') ? hostedCase : undefined, want('threads') ? threadsCase : undefined]
  const ran = await (r % 2 ? [...pair].reverse() : pair).reduce(
    async (acc, c) => (c ? [...(await acc), await c()] : acc),
    Promise.resolve([] as Row[]),
  )
  these.push(...(r % 2 ? ran.reverse() : ran))
  if (want('upstream'))
    these.push(
      await run(
        'paid: local upstream (undici)',
        `${config.proxyUrl}/tollgate/toolbox/upstream-echo`,
        await headersFor('/tollgate/toolbox/upstream-echo', perCase),
      ),
    )
  if (want('payid'))
    these.push(
      await run(
        'paid: hosted handler, with payment-identifier',
        `${config.proxyUrl}/tollgate/toolbox/echo?msg=hi`,
        await withPaymentIds('/tollgate/toolbox/echo?msg=hi', perCase),
      ),
    )
  if (want('access'))
    these.push(
      await run(
        'paid: hosted handler with paid access (grants)',
        `${config.proxyUrl}/tollgate/toolbox/echo-access?msg=hi`,
        await headersFor('/tollgate/toolbox/echo-access?msg=hi', perCase),
      ),
    )
  if (want('signin')) {
    // one paid call grants the demo payer the access the sign-ins use
    const [grant] = await headersFor('/tollgate/toolbox/echo-access?msg=hi', 1)
    await fetch(`${config.proxyUrl}/tollgate/toolbox/echo-access?msg=hi`, { headers: { 'payment-signature': grant! } })
    these.push(
      await run(
        'sign-in-with-x: hosted handler (paid access)',
        `${config.proxyUrl}/tollgate/toolbox/echo-access?msg=hi`,
        await signInsFor('/tollgate/toolbox/echo-access?msg=hi', perCase),
        connections,
        'sign-in-with-x',
      ),
    )
  }
  roundRows.push(these)
}
rows.push(...roundRows[0]!)

if (want('forward')) {
  // forwarding alone (no payment), the two candidate implementations side by side
  const viaHttpProxy = Fastify()
  await viaHttpProxy.register((await import('@fastify/http-proxy')).default, {
    upstream: upstreamUrl.replace(/\/echo$/, ''),
    prefix: '/fwd',
  })
  await viaHttpProxy.listen({ port: 0, host: '127.0.0.1' })
  const viaUndici = Fastify()
  const client = createUpstreamClient({ allowPrivate: true })
  viaUndici.get('/fwd/echo', async (request, reply) => {
    const res = await client.forward({
      origin: upstreamUrl,
      subPath: '',
      method: 'GET',
      headers: request.headers,
      body: undefined,
      options: {},
      paymentId: 'bench',
    })
    return reply.code(res.status).headers(res.headers).send(res.body)
  })
  await viaUndici.listen({ port: 0, host: '127.0.0.1' })
  const portOf = (f: typeof bare) => (f.server.address() as { port: number }).port
  rows.push(await run('forward only: @fastify/http-proxy', `http://127.0.0.1:${portOf(viaHttpProxy)}/fwd/echo`))
  rows.push(await run('forward only: undici (ours)', `http://127.0.0.1:${portOf(viaUndici)}/fwd/echo`))
  await viaHttpProxy.close()
  await viaUndici.close()
  await client.close()
}
if (want('reference')) {
  // the official middleware settles every payment on-chain before answering: fewer headers needed
  const ref = await startReferenceStack(
    devnet,
    devnet.accounts.receiver.address,
    devnet.accounts.relayers[2]!.privateKey,
  )
  // a funded payer per connection
  const payers: ExactPayer[] = []
  for (let i = 0; i < connections; i++) {
    const privateKey = generatePrivateKey()
    const address = privateKeyToAccount(privateKey).address
    await mintUsdc(devnet.rpcUrl, address, 10_000_000n)
    payers.push({ address, privateKey })
  }
  // each run settles every payment through one facilitator account; failed rows are counted, not in req/s.
  // The ratio below uses the better of the two runs
  rows.push(
    await run(
      'reference: @x402/express + facilitator',
      ref.url,
      await referenceHeaders(ref.url, Math.ceil(seconds * 400), payers),
    ),
  )
  rows.push(
    await run('reference, 1 connection', ref.url, await referenceHeaders(ref.url, Math.ceil(seconds * 400), payers), 1),
  )
  await ref.close()
  // ours on one connection too, for the ratio at 1
  if (want('hosted'))
    rows.push(
      await run(
        'paid: hosted handler, 1 connection',
        `${config.proxyUrl}/tollgate/toolbox/echo?msg=hi`,
        await headersFor('/tollgate/toolbox/echo?msg=hi', Math.ceil(seconds * 2000)),
        1,
      ),
    )
}

const base = rows[0]!.rps
const paid = rows.find((r) => r.name.startsWith('paid: hosted'))
const paid1 = rows.find((r) => r.name === 'paid: hosted handler, 1 connection')
const reference = rows.find((r) => r.name.startsWith('reference: @x402/express'))
const reference1 = rows.find((r) => r.name === 'reference, 1 connection')
console.log(
  `\n${seconds} s per case, ${connections} connections, node ${process.version}, ${(await import('node:os')).cpus().length} cores\n`,
)
console.log(
  `| case | req/s | p50 ms | p99 ms | CPU µs/req (bench process + handler processes) | machine CPU µs/req (of it Postgres, Redis) | vs ${rows[0]!.name} | CPU × ${rows[0]!.name}'s: here · machine |`,
)
console.log('|---|---:|---:|---:|---:|---:|---:|---:|')
const baseCpu = rows[0]!.machineUs
for (const r of rows) {
  console.log(
    `| ${r.name} | ${Math.round(r.rps)} | ${r.p50} | ${r.p99} | ${Math.round(r.cpuUs)} | ${Math.round(r.machineUs)} (${Math.round(r.pgUs)}, ${Math.round(r.redisUs)}) | ${((r.rps / base) * 100).toFixed(1)}% | ${(r.cpuUs / rows[0]!.cpuUs).toFixed(1)}× · ${(r.machineUs / baseCpu).toFixed(1)}× |${r.non2xx ? ` ${r.non2xx} failed` : ''}`,
  )
}
const times = (a: Row, b: Row) => (b.rps > 0 ? `${(a.rps / b.rps).toFixed(1)}x` : 'n/a (the reference paid no call)')
if (paid && reference)
  console.log(`\npaid hosted call vs the reference stack, ${connections} connections: ${times(paid, reference)}`)
if (paid1 && reference1)
  console.log(`paid hosted call vs the reference stack, 1 connection: ${times(paid1, reference1)}`)
if (rounds > 1) {
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!
  console.log(`\n${rounds} rounds; each ratio against the first case of its own round (median: the lower middle one)\n`)
  console.log('| case | req/s, each round | ratio, each round | median ratio |')
  console.log('|---|---|---|---:|')
  for (const [i, first] of roundRows[0]!.entries()) {
    const each = roundRows.map((rr) => rr[i]!)
    const ratios = roundRows.map((rr) => rr[i]!.rps / rr[0]!.rps)
    console.log(
      `| ${first.name} | ${each.map((r) => Math.round(r.rps)).join(' · ')} | ${ratios.map((x) => `${(x * 100).toFixed(1)}%`).join(' · ')} | ${(median(ratios) * 100).toFixed(1)}% |`,
    )
  }
}

const boundary = roundRows
  .map(
    (rr) =>
      [
        rr.find((r) => r.name.includes('handler processes')),
        rr.find((r) => r.name.includes('worker threads')),
      ] as const,
  )
  .filter(([p, th]) => p && th)
if (boundary.length) {
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!
  console.log('\nThe process boundary: paid hosted calls in handler processes vs on worker threads, each round\n')
  console.log(
    '| round | processes req/s · p99 ms · CPU µs (of it in handler processes) | threads req/s · p99 ms · CPU µs | req/s ratio | CPU µs more per call |',
  )
  console.log('|---:|---|---|---:|---:|')
  for (const [i, [p, th]] of boundary.entries())
    console.log(
      `| ${i + 1} | ${Math.round(p!.rps)} · ${p!.p99} · ${Math.round(p!.cpuUs)} (${Math.round(p!.childUs)}) | ${Math.round(th!.rps)} · ${th!.p99} · ${Math.round(th!.cpuUs)} | ${((p!.rps / th!.rps) * 100).toFixed(1)}% | ${Math.round(p!.cpuUs - th!.cpuUs)} |`,
    )
  console.log(
    `\nmedian req/s ratio ${(median(boundary.map(([p, th]) => p!.rps / th!.rps)) * 100).toFixed(1)}%, median p99 ${median(boundary.map(([p]) => p!.p99))} vs ${median(boundary.map(([, th]) => th!.p99))} ms, median extra CPU ${Math.round(median(boundary.map(([p, th]) => p!.cpuUs - th!.cpuUs)))} µs per call`,
  )
}

await proxy.close()
await proxyThreads.close()
await bare.close()
await upstream.close()
await sql`drop schema ${sql.id(schema)} cascade`.execute(deps.db)
await dropRedisPrefix(deps.redis, config.redisPrefix)
await deps.close()
await devnet.stop()

/**
 * `batch-settlement` against `exact` through the proxy, and the official reference stack, in one
 * run on this machine (`npm run bench:batch`):
 *   - paid calls/s to the same trivial hosted handler (the `echo` fixture) with exact (pre-signed
 *     ERC-3009 payments) and batch-settlement (one channel per connection, deposited once by the
 *     official client; its vouchers pre-signed, each connection sending its channel's next
 *     cumulative voucher once the previous call was served), alternating cases; every case's
 *     load is the same loop (one request in flight per connection);
 *   - CPU per paid call of this process (the proxy, and the load generator, which is the same for
 *     both cases) and of the handler processes;
 *   - Postgres rows written (inserted + updated + deleted, pg_stat_user_tables) per paid call in
 *     the paid path (no settlement or claim worker runs during the cases);
 *   - the machine's CPU per paid call (every process but anvil), on the paid path and then for the
 *     settlement of those calls, measured alone after the cases (exact's settler, in batches of
 *     SETTLEMENT_BATCH_SIZE, until nothing is left; one claim and settle of every channel), and the
 *     capacity they give together;
 *   - the official reference: `@x402/express` with the official batch-settlement server scheme
 *     and its in-process facilitator, paid by the official client through `@x402/fetch`, one
 *     client (channel) per connection.
 * Nothing is asserted.
 *
 *   node --import tsx bench/batch.bench.ts [seconds-per-case] [connections] [rounds]
 * BENCH_PROFILE=<dir>: a CPU profile of each measured case (bench/profile.ts).
 */
import { randomBytes } from 'node:crypto'
import { createRequire } from 'node:module'
import { loadavg } from 'node:os'
import { x402Client } from '@x402/core/client'
import type { PaymentRequired } from '@x402/core/types'
import { toClientEvmSigner } from '@x402/evm'
import { BatchSettlementEvmScheme } from '@x402/evm/batch-settlement/client'
import { wrapFetchWithPaymentFromConfig } from '@x402/fetch'
import { sql } from 'kysely'
import { Agent, request } from 'undici'
import { createPublicClient, http, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { startDevnet } from '../src/chain/devnet.js'
import { assertNativeSecp256k1 } from '../src/chain/recover-signer.js'
import { loadConfig } from '../src/config.js'
import { createDb } from '../src/db/create-db.js'
import { migrateToLatest } from '../src/db/migrate.js'
import { createDeps } from '../src/deps.js'
import { buildProxyApp } from '../src/http/proxy-app.js'
import { loadHandlerRegistry } from '../src/pool/handler-registry.js'
import { batchDomainSeparator, voucherDigestOf } from '../src/schemes/batch-settlement/typed-data.js'
import { BatchClaimer } from '../src/services/batch-claim/claimer.js'
import { seedHostedServices } from '../src/services/hosted-seed.js'
import { createSettler } from '../src/services/settlement/settler.js'
import { startBatchReference } from './batch-reference.js'
import { childrenCpuUs, exactPayments, machineBusyUs, processCpuUs } from './bench-payments.js'
import { profiled } from './profile.js'
import { dropRedisPrefix } from './cleanup.js'

assertNativeSecp256k1()
const secp = createRequire(import.meta.url)('secp256k1') as {
  ecdsaSign(msg: Uint8Array, key: Uint8Array): { signature: Uint8Array; recid: number }
}
const seconds = Number(process.argv[2] ?? 3)
const connections = Number(process.argv[3] ?? 8)
const rounds = Number(process.argv[4] ?? 2)

const devnet = await startDevnet({ port: 0 })
const schema = `bench_${Date.now().toString(36)}`
const env = {
  DATABASE_URL: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
  DATABASE_SCHEMA: schema,
  REDIS_PREFIX: `tgbench:${schema}`,
  RPC_URL: devnet.rpcUrl,
  PROXY_URL: 'http://127.0.0.1:45933',
  TOLLGATE_RECEIVER_ADDRESS: devnet.accounts.receiver.address,
  RELAYER_PRIVATE_KEYS: devnet.accounts.relayer.privateKey,
  LOG_LEVEL: 'silent',
  TOLLGATE_MASTER_KEY: randomBytes(32).toString('hex'),
  BATCH_SETTLEMENT: 'on',
}
const config = loadConfig(env)
const migrationDb = createDb({ databaseUrl: config.databaseUrl, schema, max: 1 })
await migrateToLatest(migrationDb, schema)
await migrationDb.destroy()
const deps = createDeps(config)
const fixtures = new URL('../test/fixtures/handlers', import.meta.url).pathname
const path = '/tollgate/toolbox/echo?msg=hi'
const url = `${config.proxyUrl}${path}`
const payer = devnet.accounts.demoPayer
const network = `eip155:${devnet.chainId}` as const
const pub = createPublicClient({ transport: http(devnet.rpcUrl) })
const signer = toClientEvmSigner(privateKeyToAccount(payer.privateKey), pub)
const key = Buffer.from(payer.privateKey.slice(2), 'hex')
const salt = () => `0x${randomBytes(32).toString('hex')}` as Hex

type Row = {
  name: string
  ok: number
  rps: number
  p50: number
  p99: number
  non2xx: number
  cpuUs: number
  childUs: number
  /** the whole machine's busy CPU per call (/proc/stat), anvil's left out */
  machineUs: number
  /** of it, Postgres's (every backend) and Redis's */
  pgUs: number
  redisUs: number
  /** Postgres transactions per call (pg_stat_database, every backend) */
  xacts: number
}
const rows: Row[] = []
/** the machine's busy CPU so far without anvil's (the chain is not the platform's on Base) */
const platformBusyUs = () => machineBusyUs() - processCpuUs('anvil')

/**
 * What the worker role spends settling the calls just served, measured alone once the paid cases
 * are over (the machine's busy CPU, anvil's left out), per call: exact's settler (the deployment's
 * batch size) until nothing is left, and batch-settlement's claim and settle of every channel at once.
 */
async function settlementCost(): Promise<Record<'exact' | 'batch-settlement', number>> {
  const calls = async (scheme: string) =>
    Number(
      (
        await deps.db
          .selectFrom('payments')
          .select((eb) => eb.fn.countAll().as('n'))
          .where('scheme', '=', scheme)
          .executeTakeFirstOrThrow()
      ).n,
    )
  // the deployment's batch size (SETTLEMENT_BATCH_SIZE)
  const settler = createSettler(deps)
  let m0 = platformBusyUs()
  let settled = 0
  for (let idle = 0; idle < 2;) {
    const r = await settler.runOnce(60_000)
    if (r.failed || r.requeued) throw new Error(`exact settlement: ${JSON.stringify(r)}`)
    settled += r.settled
    idle = r.settled === 0 ? idle + 1 : 0
  }
  const exact = (platformBusyUs() - m0) / Math.max(1, settled)
  if (settled < (await calls('exact')))
    throw new Error(`bench: ${settled} exact payments settled of ${await calls('exact')}`)
  const quiet = { info: () => {}, warn: () => {}, error: () => {} } as never
  const claimer = new BatchClaimer(deps, { log: quiet })
  m0 = platformBusyUs()
  const r = await claimer.runOnce({ force: true })
  if (r.claimed === 0n || r.settled === 0n)
    throw new Error(`bench: nothing claimed (${JSON.stringify(r, (_k, v) => String(v))})`)
  return { exact, 'batch-settlement': (platformBusyUs() - m0) / Math.max(1, await calls('batch-settlement')) }
}

try {
  await seedHostedServices(deps, await loadHandlerRegistry(fixtures))
  const proxy = await buildProxyApp(deps, { logger: false, handlersDir: fixtures })
  await proxy.listen({ port: 45933, host: '127.0.0.1' })
  const required = JSON.parse(
    Buffer.from((await fetch(url)).headers.get('payment-required')!, 'base64').toString(),
  ) as PaymentRequired
  if (!required.accepts.some((a) => a.scheme === 'batch-settlement')) throw new Error('batch-settlement not offered')
  const price = BigInt(required.accepts[0]!.amount)

  // one channel per connection, each deposited by the official client (enough for the whole run)
  const perChannel = Math.ceil(seconds * rounds * 1500)
  const domain = batchDomainSeparator(devnet.chainId)
  const channels = await Promise.all(
    Array.from({ length: connections + 1 }, async () => {
      const c = new x402Client((_v, accepts) => accepts.find((a) => a.scheme === 'batch-settlement')!)
      c.register(
        network,
        new BatchSettlementEvmScheme(signer, { salt: salt(), depositPolicy: { depositMultiplier: perChannel + 10 } }),
      )
      return c
    }),
  )
  const opened: Array<{ next: number; headers: string[] }> = []
  for (const c of channels) {
    const deposit = await c.createPaymentPayload(required)
    const res = await fetch(url, {
      headers: { 'payment-signature': Buffer.from(JSON.stringify(deposit)).toString('base64') },
    })
    if (res.status !== 200) throw new Error(`deposit: ${res.status} ${await res.text()}`)
    const p = deposit.payload as { channelConfig: unknown; voucher: { channelId: Hex } }
    const channelId = p.voucher.channelId
    // its vouchers, pre-signed: cumulative 2 x price, 3 x price, ...
    const headers = Array.from({ length: perChannel }, (_, i) => {
      const max = price * BigInt(i + 2)
      const { signature, recid } = secp.ecdsaSign(voucherDigestOf(domain, channelId, max), key)
      const voucher = {
        channelId,
        maxClaimableAmount: max.toString(),
        signature: `0x${Buffer.from(signature).toString('hex')}${(27 + recid).toString(16)}`,
      }
      const body = { ...deposit, payload: { type: 'voucher', channelConfig: p.channelConfig, voucher } }
      return Buffer.from(JSON.stringify(body)).toString('base64')
    })
    opened.push({ next: 0, headers })
  }
  // the warm-up channel (the last one): both paths loaded before anything is measured
  const warm = opened.pop()!
  const exactHeaders = (count: number) =>
    exactPayments(payer, config.chain, required as never, count).map((x) =>
      Buffer.from(JSON.stringify(x)).toString('base64'),
    )
  for (const h of [...exactHeaders(20), ...warm.headers.slice(0, 20)]) {
    const r = await fetch(url, { headers: { 'payment-signature': h } })
    if (r.status !== 200) throw new Error(`warm-up: ${r.status} ${await r.text()}`)
  }

  const xacts = async () =>
    Number(
      (
        await sql<{
          n: string
        }>`select xact_commit + xact_rollback as n from pg_stat_database where datname = current_database()`.execute(
          deps.db,
        )
      ).rows[0]!.n,
    )
  async function measure(name: string, go: () => Promise<{ ok: number; non2xx: number; p50: number; p99: number }>) {
    const x0 = await xacts()
    const cpu0 = process.cpuUsage()
    const child0 = childrenCpuUs()
    const machine0 = platformBusyUs()
    const [pg0, redis0] = [processCpuUs('postgres'), processCpuUs('redis-server')]
    const t0 = performance.now()
    const r = await profiled(`${name}-${rows.length}`, go)
    const s = (performance.now() - t0) / 1000
    const cpu = process.cpuUsage(cpu0)
    const row = {
      name,
      ok: r.ok,
      rps: r.ok / s,
      p50: r.p50,
      p99: r.p99,
      non2xx: r.non2xx,
      cpuUs: (cpu.user + cpu.system) / Math.max(1, r.ok),
      childUs: (childrenCpuUs() - child0) / Math.max(1, r.ok),
      machineUs: (platformBusyUs() - machine0) / Math.max(1, r.ok),
      pgUs: (processCpuUs('postgres') - pg0) / Math.max(1, r.ok),
      redisUs: (processCpuUs('redis-server') - redis0) / Math.max(1, r.ok),
      xacts: ((await xacts()) - x0 - 1) / Math.max(1, r.ok),
    }
    rows.push(row)
    return row
  }
  const dispatcher = new Agent({ connections })
  /**
   * `connections` workers for `seconds`, each sending its next header once the previous call was
   * answered; `next(worker)` gives a worker's next header, `served(worker)` is told of each 200
   * (a refused voucher is sent again).
   */
  async function loop(next: (w: number) => string, served: (w: number) => void = () => {}) {
    const until = performance.now() + seconds * 1000
    let ok = 0
    let non2xx = 0
    const lat: number[] = []
    await Promise.all(
      Array.from({ length: connections }, async (_, w) => {
        while (performance.now() < until) {
          const t0 = performance.now()
          const res = await request(url, { dispatcher, headers: { 'payment-signature': next(w) } })
          await res.body.dump()
          lat.push(performance.now() - t0)
          if (res.statusCode === 200) {
            ok++
            served(w)
          } else non2xx++
        }
      }),
    )
    lat.sort((a, b) => a - b)
    const at = (q: number) => Math.round(lat[Math.floor(q * (lat.length - 1))] ?? 0)
    return { ok, non2xx, p50: at(0.5), p99: at(0.99) }
  }
  // exact's payments are pre-signed, each usable once: enough for 5,000 calls/s (at 1,500/s, the
  // figure before, a quiet machine used them up and the rest were refused replays, capping exact)
  const exactPool = exactHeaders(Math.ceil(seconds * rounds * 5000))
  let exactNext = 0
  const exactCase = () => {
    const headers = exactPool.slice(exactNext)
    let i = 0
    return loop(() => {
      exactNext++
      if (i >= headers.length) throw new Error('bench: the pre-signed exact payments ran out; sign more')
      return headers[i++]!
    })
  }
  const batchCase = () =>
    loop(
      (w) => opened[w]!.headers[opened[w]!.next]!,
      (w) => void opened[w]!.next++,
    )

  // Postgres rows written per paid call, one case of each (other backends flush within 10 s of idling)
  const written = async () => {
    await sql`select pg_stat_force_next_flush()`.execute(deps.db)
    const r = await sql<{ n: string }>`
      select coalesce(sum(n_tup_ins + n_tup_upd + n_tup_del), 0) as n
      from pg_stat_user_tables where schemaname = ${schema}`.execute(deps.db)
    return Number(r.rows[0]!.n)
  }
  const statsSettled = () => new Promise((r) => setTimeout(r, 11_000))
  const writes: Record<string, number> = {}
  for (let round = 0; round < rounds; round++) {
    for (const [name, go] of [
      ['exact', exactCase],
      ['batch-settlement', batchCase],
    ] as const) {
      if (round === 0) await statsSettled()
      const w0 = round === 0 ? await written() : 0
      const row = await measure(name, go)
      if (round === 0) {
        await statsSettled()
        writes[name] = ((await written()) - w0) / Math.max(1, row.ok)
      }
    }
  }
  await dispatcher.close()
  await proxy.close()
  const settling = await settlementCost()

  // the official reference stack, one official client (channel) per connection
  const ref = await startBatchReference(
    devnet,
    devnet.accounts.receiver.address,
    devnet.accounts.relayers[2]!.privateKey,
    generatePrivateKey(),
  )
  const refClients = Array.from({ length: connections }, () =>
    wrapFetchWithPaymentFromConfig(fetch, {
      schemes: [
        {
          network,
          client: new BatchSettlementEvmScheme(signer, { salt: salt(), depositPolicy: { depositMultiplier: 1000 } }),
        },
      ],
    }),
  )
  // each client's deposit before the measured part
  for (const pay of refClients) {
    const r = await pay(ref.url)
    if (r.status !== 200) throw new Error(`reference deposit: ${r.status} ${await r.text()}`)
  }
  await measure('reference (official express + batch-settlement)', async () => {
    const until = performance.now() + seconds * 1000
    let ok = 0
    let non2xx = 0
    const lat: number[] = []
    await Promise.all(
      refClients.map(async (pay) => {
        while (performance.now() < until) {
          const t0 = performance.now()
          const r = await pay(ref.url)
          await r.arrayBuffer()
          lat.push(performance.now() - t0)
          if (r.status === 200) ok++
          else non2xx++
        }
      }),
    )
    lat.sort((a, b) => a - b)
    const at = (q: number) => Math.round(lat[Math.floor(q * (lat.length - 1))] ?? 0)
    return { ok, non2xx, p50: at(0.5), p99: at(0.99) }
  })
  await ref.close()

  console.log(
    `paid calls to a trivial handler, ${connections} connections, ${seconds} s per case, load average ${loadavg()
      .map((x) => x.toFixed(2))
      .join(' ')}`,
  )
  console.log(
    '| case | paid calls/s | p50 ms | p99 ms | non-2xx | CPU µs/call (this process) | CPU µs/call (handlers) | machine CPU µs/call (of it Postgres, Redis) | Postgres transactions/call |\n|---|---|---|---|---|---|---|---|---|',
  )
  for (const x of rows)
    console.log(
      `| ${x.name} | ${x.rps.toFixed(0)} | ${x.p50} | ${x.p99} | ${x.non2xx} | ${x.cpuUs.toFixed(0)} | ${x.childUs.toFixed(0)} | ${x.machineUs.toFixed(0)} (${x.pgUs.toFixed(0)}, ${x.redisUs.toFixed(0)}) | ${x.xacts.toFixed(2)} |`,
    )
  const median = (name: string) => {
    const v = rows
      .filter((x) => x.name === name)
      .map((x) => x.rps)
      .sort((a, b) => a - b)
    return v[Math.floor(v.length / 2)]!
  }
  const refRps = rows.at(-1)!.rps
  console.log(`batch-settlement/exact (medians): ${((median('batch-settlement') / median('exact')) * 100).toFixed(1)}%`)
  console.log(`Tollgate batch-settlement / reference: ${(median('batch-settlement') / refRps).toFixed(1)}x`)
  console.log(
    `Postgres rows written per paid call: exact ${writes.exact?.toFixed(2)}, batch-settlement ${writes['batch-settlement']?.toFixed(2)}`,
  )
  const pathUs = (name: string) => {
    const v = rows.filter((x) => x.name === name).map((x) => x.machineUs)
    return v.sort((a, b) => a - b)[Math.floor(v.length / 2)]!
  }
  const whole = (name: 'exact' | 'batch-settlement') => pathUs(name) + settling[name]
  console.log(
    `\nmachine CPU per paid call (every process but anvil; medians): paid path + settlement\n` +
      `| scheme | paid path µs | settlement µs | whole µs |\n|---|---:|---:|---:|\n` +
      (['exact', 'batch-settlement'] as const)
        .map((n) => `| ${n} | ${pathUs(n).toFixed(0)} | ${settling[n].toFixed(0)} | ${whole(n).toFixed(0)} |`)
        .join('\n'),
  )
  console.log(
    `calls/s one machine sustains with settlement (CPU-bound: inverse of the whole CPU per call), batch-settlement/exact: ${((whole('exact') / whole('batch-settlement')) * 100).toFixed(1)}%`,
  )
} finally {
  await sql`drop schema if exists ${sql.id(schema)} cascade`.execute(deps.db).catch(() => {})
  await dropRedisPrefix(deps.redis, env.REDIS_PREFIX).catch(() => {})
  await deps.close()
  await devnet.stop()
}

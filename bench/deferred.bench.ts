/**
 * The `deferred` scheme against `exact`, in one run on a fresh devnet, Postgres schema and Redis
 * prefix (`npm run bench:deferred`):
 *
 * 1. Paid calls/s through the proxy (HTTP, a hosted echo handler): CALLS calls from 10 buyers to 2
 *    sellers, 20 (buyer, seller) pairs in parallel, each pair's calls in order (a deferred voucher
 *    aggregates onto the one before) — exact (EIP-3009 authorizations) first, then deferred
 *    (vouchers; each buyer deposited for each seller beforehand). Payments are pre-signed.
 * 2. On-chain gas per paid call, from the receipts of what the platform's own code sent: the exact
 *    calls settled by the settler (`createSettler`, Multicall3 batches of 50), the deferred calls
 *    collected by the collector (`DeferredCollector`, one `collectMany` per seller). The buyers'
 *    deposits are shown apart (once per buyer and seller, not per call).
 *
 *   node --import tsx bench/deferred.bench.ts [calls=10000]
 */
import { randomBytes } from 'node:crypto'
import { createRequire } from 'node:module'
import { loadavg } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { sql } from 'kysely'
import { Agent, request } from 'undici'
import {
  createPublicClient,
  createTestClient,
  createWalletClient,
  getAddress,
  hashTypedData,
  http,
  type Abi,
  type Address,
  type Hex,
} from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import artifacts from '../src/chain/contracts/artifacts.json' with { type: 'json' }
import { mintUsdc, startDevnet } from '../src/chain/devnet.js'
import { assertNativeSecp256k1 } from '../src/chain/recover-signer.js'
import { makeDomainSeparator, transferAuthDigest } from '../src/chain/transfer-auth-digest.js'
import { loadConfig } from '../src/config.js'
import { createDb } from '../src/db/create-db.js'
import { migrateToLatest } from '../src/db/migrate.js'
import { createDeps } from '../src/deps.js'
import { buildProxyApp } from '../src/http/proxy-app.js'
import { loadHandlerRegistry } from '../src/pool/handler-registry.js'
import { deferredEscrowAbi } from '../src/schemes/deferred/escrow-abi.js'
import { voucherTypedData, type DeferredVoucher } from '../src/schemes/deferred/typed-data.js'
import { voucherDigest, voucherDomainSeparator } from '../src/schemes/deferred/voucher-digest.js'
import { createVoucherHeads } from '../src/schemes/deferred/voucher-heads.js'
import { DeferredCollector } from '../src/services/deferred-collect/collector.js'
import { seedHostedServices } from '../src/services/hosted-seed.js'
import { announceRegistryChange } from '../src/services/registry-events.js'
import { createSettler } from '../src/services/settlement/settler.js'
import { dropRedisPrefix } from './cleanup.js'

assertNativeSecp256k1()
const secp = createRequire(import.meta.url)('secp256k1') as {
  ecdsaSign(msg: Uint8Array, key: Uint8Array): { signature: Uint8Array; recid: number }
}
const CALLS = Number(process.argv[2] ?? 10_000)
const BUYERS = 10
const SELLERS = 2
const PER_PAIR = Math.ceil(CALLS / (BUYERS * SELLERS))
const here = path.dirname(fileURLToPath(import.meta.url))
const loadAtStart = loadavg()
  .map((l) => l.toFixed(2))
  .join(' ')

const devnet = await startDevnet({ port: 0 })
const schema = `bench_deferred_${Date.now().toString(36)}`
const port = 46000 + Math.floor(Math.random() * 1000)
const env = {
  DATABASE_URL: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
  REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
  DATABASE_SCHEMA: schema,
  REDIS_PREFIX: `tgbench:${schema}`,
  RPC_URL: devnet.rpcUrl,
  PROXY_URL: `http://127.0.0.1:${port}`,
  TOLLGATE_RECEIVER_ADDRESS: devnet.accounts.receiver.address,
  RELAYER_PRIVATE_KEYS: devnet.accounts.relayer.privateKey,
  // exact authorizations are signed before the run and settled after it
  X402_MAX_VALID_FOR_SECONDS: '3600',
  LOG_LEVEL: 'silent',
  TOLLGATE_MASTER_KEY: randomBytes(32).toString('hex'),
}
const config = loadConfig(env)
const migrationDb = createDb({ databaseUrl: config.databaseUrl, schema, max: 1 })
await migrateToLatest(migrationDb, schema)
await migrationDb.destroy()
const deps = createDeps(config)
const fixtures = path.resolve(here, '../test/fixtures/handlers')
const pub = createPublicClient({ chain: devnet.chain, transport: http(devnet.rpcUrl), pollingInterval: 20 })
const quiet = { info() {}, warn() {}, error() {} }
let proxy: Awaited<ReturnType<typeof buildProxyApp>> | undefined

try {
  // two sellers: the echo endpoint, and a copy of it paying another address; both offer deferred
  await seedHostedServices(deps, await loadHandlerRegistry(fixtures))
  const sellers = [getAddress(devnet.accounts.receiver.address), privateKeyToAccount(generatePrivateKey()).address]
  // the second seller: a copy of the toolbox service (its own payTo) with the echo endpoint
  const echo = await deps.db.selectFrom('endpoints').selectAll().where('slug', '=', 'echo').executeTakeFirstOrThrow()
  const toolbox = await deps.db
    .selectFrom('services')
    .selectAll()
    .where('id', '=', echo.service_id)
    .executeTakeFirstOrThrow()
  await deps.db
    .updateTable('endpoints')
    .set({ schemes: ['exact', 'deferred'] })
    .where('id', '=', echo.id)
    .execute()
  const { id: _s, created_at: _sc, updated_at: _su, ...service } = toolbox
  const b = await deps.db
    .insertInto('services')
    .values({ ...service, name: 'toolbox-b', pay_to: sellers[1]!.toLowerCase() } as never)
    .returning('id')
    .executeTakeFirstOrThrow()
  const { id: _e, created_at: _ec, updated_at: _eu, ...endpoint } = echo
  await deps.db
    .insertInto('endpoints')
    .values({ ...endpoint, service_id: b.id, schemes: ['exact', 'deferred'] } as never)
    .execute()
  if (toolbox.pay_to.toLowerCase() !== sellers[0]!.toLowerCase()) throw new Error(`toolbox pays ${toolbox.pay_to}`)
  await announceRegistryChange(deps)
  proxy = await buildProxyApp(deps, { logger: false, handlersDir: fixtures })
  await proxy.listen({ port, host: '127.0.0.1' })
  const paths = ['/tollgate/toolbox/echo?msg=hi', '/tollgate/toolbox-b/echo?msg=hi']
  const required = await Promise.all(
    paths.map(async (p) =>
      JSON.parse(
        Buffer.from((await fetch(`${config.proxyUrl}${p}`)).headers.get('payment-required')!, 'base64').toString(),
      ),
    ),
  )
  for (const r of required)
    if (r.accepts.length !== 2) throw new Error(`deferred not offered: ${JSON.stringify(r.accepts)}`)
  const price = BigInt(required[0].accepts[0].amount)

  // ten buyers with gas and USDC, each depositing PER_PAIR x price for each seller
  const testClient = createTestClient({ chain: devnet.chain, mode: 'anvil', transport: http(devnet.rpcUrl) })
  const buyerKeys = Array.from({ length: BUYERS }, () => generatePrivateKey())
  const buyers = buyerKeys.map((k) => privateKeyToAccount(k))
  let depositGas = 0n
  for (const b of buyers) {
    await testClient.setBalance({ address: b.address, value: 10n ** 20n })
    await mintUsdc(devnet.rpcUrl, b.address, 10n * BigInt(PER_PAIR) * price * BigInt(SELLERS))
    const wallet = createWalletClient({ account: b, chain: devnet.chain, transport: http(devnet.rpcUrl) })
    const send = async (address: Address, abi: Abi, functionName: string, args: readonly unknown[]) => {
      const r = await pub.waitForTransactionReceipt({
        hash: await wallet.writeContract({ address, abi, functionName, args, chain: devnet.chain, account: b }),
      })
      if (r.status !== 'success') throw new Error(`${functionName} reverted`)
      return r.gasUsed
    }
    const deposit = BigInt(PER_PAIR) * price
    depositGas += await send(devnet.usdcAddress, artifacts.contracts.TestUSDC.abi as Abi, 'approve', [
      devnet.deferredEscrowAddress,
      deposit * BigInt(SELLERS),
    ])
    for (const s of sellers)
      depositGas += await send(devnet.deferredEscrowAddress, deferredEscrowAbi as Abi, 'deposit', [
        s,
        devnet.usdcAddress,
        deposit,
      ])
  }

  // pre-signed: per pair, PER_PAIR exact authorizations and a chain of PER_PAIR vouchers
  const ds = makeDomainSeparator({
    name: config.chain.usdc.name,
    version: config.chain.usdc.version,
    chainId: config.chain.chainId,
    verifyingContract: config.chain.usdc.address,
  })
  const sign = (digest: Uint8Array, key: Hex) => {
    const { signature, recid } = secp.ecdsaSign(digest, Buffer.from(key.slice(2), 'hex'))
    return `0x${Buffer.from(signature).toString('hex')}${(27 + recid).toString(16)}`
  }
  const now = Math.floor(Date.now() / 1000)
  interface Pair {
    path: string
    exact: string[]
    deferred: string[]
  }
  const pairs: Pair[] = []
  const t0 = performance.now()
  for (let b = 0; b < BUYERS; b++) {
    for (let s = 0; s < SELLERS; s++) {
      const req = required[s]
      const [exactReq, deferredReq] = req.accepts
      const pair: Pair = { path: paths[s]!, exact: [], deferred: [] }
      let previous: DeferredVoucher | undefined
      const id = `0x${randomBytes(32).toString('hex')}` as Hex
      for (let i = 0; i < PER_PAIR; i++) {
        const auth = {
          from: buyers[b]!.address,
          to: exactReq.payTo,
          value: price,
          validAfter: BigInt(now - 60),
          validBefore: BigInt(now + 3000),
          nonce: `0x${randomBytes(32).toString('hex')}`,
        }
        const payload = {
          signature: sign(transferAuthDigest(ds, auth), buyerKeys[b]!),
          authorization: {
            ...auth,
            value: String(auth.value),
            validAfter: String(auth.validAfter),
            validBefore: String(auth.validBefore),
          },
        }
        pair.exact.push(
          Buffer.from(JSON.stringify({ x402Version: 2, resource: req.resource, accepted: exactReq, payload })).toString(
            'base64',
          ),
        )
        const v: DeferredVoucher = {
          id,
          buyer: buyers[b]!.address,
          seller: getAddress(deferredReq.payTo),
          valueAggregate: (previous?.valueAggregate ?? 0n) + price,
          asset: getAddress(deferredReq.asset),
          timestamp: BigInt(now + i),
          nonce: BigInt(i),
          escrow: getAddress(deferredReq.extra.escrow),
          chainId: BigInt(config.chain.chainId),
        }
        const wire = {
          ...v,
          valueAggregate: v.valueAggregate.toString(),
          timestamp: Number(v.timestamp),
          nonce: Number(v.nonce),
          chainId: Number(v.chainId),
        }
        const dp = {
          voucher: wire,
          signature: sign(Buffer.from(hashTypedData(voucherTypedData(v)).slice(2), 'hex'), buyerKeys[b]!),
        }
        pair.deferred.push(
          Buffer.from(
            JSON.stringify({ x402Version: 2, resource: req.resource, accepted: deferredReq, payload: dp }),
          ).toString('base64'),
        )
        previous = v
      }
      pairs.push(pair)
    }
  }
  const signMs = performance.now() - t0

  // the calls: 20 pairs in parallel, each in order
  const agent = new Agent({ connections: BUYERS * SELLERS, pipelining: 1 })
  async function run(which: 'exact' | 'deferred', from = 0, to = PER_PAIR) {
    let failed = 0
    const lat: number[] = []
    const start = performance.now()
    await Promise.all(
      pairs.map(async (p) => {
        for (const header of p[which].slice(from, to)) {
          const c0 = performance.now()
          const r = await request(`${config.proxyUrl}${p.path}`, {
            dispatcher: agent,
            headers: { 'payment-signature': header },
          })
          await r.body.text()
          lat.push(performance.now() - c0)
          if (r.statusCode !== 200) failed++
        }
      }),
    )
    const secs = (performance.now() - start) / 1000
    lat.sort((a, b) => a - b)
    return {
      calls: lat.length,
      failed,
      perS: lat.length / secs,
      p50: lat[Math.floor(lat.length / 2)]!,
      p99: lat[Math.floor(lat.length * 0.99)]!,
    }
  }
  // Two rounds, alternating: exact then deferred on the first half of each pair's calls (it also
  // warms the process up: JIT, pools, prepared statements), then again on the second half. The
  // table shows the second round (both warm); the first round is printed below it.
  // BENCH_DEFERRED_FIRST=1 puts deferred first in each round.
  const deferredFirst = process.env.BENCH_DEFERRED_FIRST === '1'
  const half = Math.floor(PER_PAIR / 2)
  const round = async (from: number, to: number) => {
    const d = deferredFirst ? await run('deferred', from, to) : undefined
    const e = await run('exact', from, to)
    return { exact: e, deferred: d ?? (await run('deferred', from, to)) }
  }
  const first = await round(0, half)
  const { exact, deferred } = await round(half, PER_PAIR)
  await agent.close()

  // gas: the exact calls settled by the settler in batches of 50, the deferred ones collected
  const gasOf = async (scheme: 'exact' | 'deferred') => {
    const txs = await deps.db
      .selectFrom('payments')
      .select('tx_hash')
      .distinct()
      .where('scheme', '=', scheme)
      .where('status', '=', 'settled')
      .execute()
    let gas = 0n
    for (const { tx_hash } of txs) gas += (await pub.getTransactionReceipt({ hash: tx_hash as Hex })).gasUsed
    const settled = Number(
      (
        await deps.db
          .selectFrom('payments')
          .select((eb) => eb.fn.countAll().as('n'))
          .where('scheme', '=', scheme)
          .where('status', '=', 'settled')
          .executeTakeFirstOrThrow()
      ).n,
    )
    return { txs: txs.length, gas, settled }
  }
  const settler = createSettler(deps, { batchSize: 50 })
  const s0 = performance.now()
  for (let idle = 0; idle < 3;) {
    const r = await settler.runOnce(60_000)
    if (r.failed || r.requeued) throw new Error(`exact settlement: ${JSON.stringify(r)}`)
    idle = r.settled === 0 ? idle + 1 : 0
  }
  const settleMs = performance.now() - s0
  const collector = new DeferredCollector(deps, { escrow: devnet.deferredEscrowAddress, log: quiet })
  const c0 = performance.now()
  for (let idle = 0; idle < 2;) idle = (await collector.runOnce({ force: true })).settled === 0 ? idle + 1 : 0
  const collectMs = performance.now() - c0
  const [ge, gd] = [await gasOf('exact'), await gasOf('deferred')]
  const perE = Number(ge.gas) / ge.settled
  const perD = Number(gd.gas) / gd.settled
  const perDWithDeposits = (Number(gd.gas) + Number(depositGas)) / gd.settled

  // the parts of a deferred call that exact does not have, measured alone: the voucher
  // reservation (one Redis script run; the Postgres write rides the ledger's group commit) at the
  // same 20 in parallel, and the voucher's EIP-712 digest (hand-written, and viem's hashTypedData)
  const heads = createVoucherHeads(deps)
  const a0 = performance.now()
  const acceptLat: number[] = []
  await Promise.all(
    Array.from({ length: BUYERS * SELLERS }, async () => {
      const buyer = privateKeyToAccount(generatePrivateKey()).address.toLowerCase() as Address
      const id = `0x${randomBytes(32).toString('hex')}` as Hex
      for (let i = 0; i < 100; i++) {
        const v: DeferredVoucher = {
          id,
          buyer,
          seller: sellers[0]!.toLowerCase() as Address,
          valueAggregate: BigInt(i + 1) * price,
          asset: devnet.usdcAddress.toLowerCase() as Address,
          timestamp: BigInt(now + i),
          nonce: BigInt(i),
          escrow: devnet.deferredEscrowAddress.toLowerCase() as Address,
          chainId: BigInt(config.chain.chainId),
        }
        const t1 = performance.now()
        const r = await heads.reserve({
          voucher: v,
          digest: `0x${randomBytes(32).toString('hex')}`,
          amount: price,
          available: 10n ** 12n,
          availableAtMs: Date.now(),
          nowMs: Date.now(),
        })
        acceptLat.push(performance.now() - t1)
        if (!r.ok) throw new Error(r.message)
      }
    }),
  )
  const acceptPerS = acceptLat.length / ((performance.now() - a0) / 1000)
  acceptLat.sort((x, y) => x - y)
  const sample = {
    id: `0x${'ab'.repeat(32)}` as Hex,
    buyer: sellers[1]!,
    seller: sellers[0]!,
    valueAggregate: price,
    asset: getAddress(devnet.usdcAddress),
    timestamp: BigInt(now),
    nonce: 0n,
    escrow: getAddress(devnet.deferredEscrowAddress),
    chainId: BigInt(config.chain.chainId),
  }
  const h0 = performance.now()
  for (let i = 0; i < 2000; i++) hashTypedData(voucherTypedData({ ...sample, nonce: BigInt(i) }))
  const viemDigestUs = ((performance.now() - h0) * 1000) / 2000
  const vds = voucherDomainSeparator(sample.chainId, sample.escrow)
  const h1 = performance.now()
  for (let i = 0; i < 20_000; i++) voucherDigest(vds, { ...sample, nonce: BigInt(i) })
  const digestUs = ((performance.now() - h1) * 1000) / 20_000

  console.log(
    `load average at start: ${loadAtStart}; ${deferredFirst ? 'deferred first in each round; ' : ''}${CALLS} calls per scheme in two rounds (the table: the second), ${BUYERS} buyers x ${SELLERS} sellers, ${PER_PAIR} calls per pair; signing ${signMs.toFixed(0)} ms\n`,
  )
  console.log('| scheme | calls ok | failed | calls/s | p50 ms | p99 ms | vs exact |')
  console.log('|---|---:|---:|---:|---:|---:|---:|')
  for (const [name, r] of [
    ['exact', exact],
    ['deferred', deferred],
  ] as const) {
    console.log(
      `| ${name} | ${r.calls - r.failed} | ${r.failed} | ${r.perS.toFixed(0)} | ${r.p50.toFixed(1)} | ${r.p99.toFixed(1)} | ${((r.perS / exact.perS) * 100).toFixed(0)}% |`,
    )
  }
  console.log(
    `\nfirst round (warm-up, ${first.exact.calls} calls each): exact ${first.exact.perS.toFixed(0)}/s, deferred ${first.deferred.perS.toFixed(0)}/s (${((first.deferred.perS / first.exact.perS) * 100).toFixed(0)}%)`,
  )
  console.log('\n| on chain | payments settled | transactions | gas | gas per paid call | vs exact | wall time |')
  console.log('|---|---:|---:|---:|---:|---:|---:|')
  console.log(
    `| exact: settler, Multicall3 batches of 50 | ${ge.settled} | ${ge.txs} | ${ge.gas} | ${perE.toFixed(0)} | 100% | ${settleMs.toFixed(0)} ms |`,
  )
  console.log(
    `| deferred: collector, collectMany | ${gd.settled} | ${gd.txs} | ${gd.gas} | ${perD.toFixed(1)} | ${((perD / perE) * 100).toFixed(2)}% | ${collectMs.toFixed(0)} ms |`,
  )
  console.log(
    `| deferred with the buyers' approve + deposits (${BUYERS * (1 + SELLERS)} txs, ${depositGas} gas) | | | | ${perDWithDeposits.toFixed(1)} | ${((perDWithDeposits / perE) * 100).toFixed(2)}% | |`,
  )
  console.log(
    `\ndeferred parts alone: voucher reservation (Redis) ${acceptPerS.toFixed(0)}/s at ${BUYERS * SELLERS} in parallel (p50 ${acceptLat[Math.floor(acceptLat.length / 2)]!.toFixed(2)} ms, p99 ${acceptLat[Math.floor(acceptLat.length * 0.99)]!.toFixed(2)} ms); voucher digest ${digestUs.toFixed(1)} µs (viem hashTypedData ${viemDigestUs.toFixed(0)} µs)`,
  )
  console.log(
    `\ncalls per collection transaction: ${(gd.settled / Math.max(1, gd.txs)).toFixed(0)} (exact: ${(ge.settled / Math.max(1, ge.txs)).toFixed(0)} per transaction)`,
  )
} finally {
  await proxy?.close()
  await sql`drop schema if exists ${sql.id(schema)} cascade`.execute(deps.db)
  await dropRedisPrefix(deps.redis, config.redisPrefix)
  await deps.close()
  await devnet.stop()
}

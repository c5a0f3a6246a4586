/**
 * The `upto` scheme against `exact`, in one run on this machine (`npm run bench:upto`):
 *   1. paid calls/s to the same trivial hosted handler (the `echo` fixture, in handler processes),
 *      alternating exact and upto cases, payments pre-signed (the bench signs faster than the
 *      proxy verifies);
 *   2. settlement gas per payment: one Multicall3 batch of 50 exact transferWithAuthorization calls
 *      against one of 50 upto `settle` calls through the upto proxy (Permit2), and a single
 *      transaction of each;
 *   3. (unless BENCH_REFERENCE=0) the official upto stack (@x402/express, @x402/evm's upto server
 *      scheme and facilitator, settling each call on-chain before answering) at the same
 *      connections and at 1, against ours.
 * Nothing is asserted.
 *
 *   node --import tsx bench/upto.bench.ts [seconds-per-case] [connections] [rounds]
 */
import { randomBytes } from 'node:crypto'
import { createRequire } from 'node:module'
import autocannon from 'autocannon'
import { sql } from 'kysely'
import { createPublicClient, createWalletClient, erc20Abi, getAddress, http, maxUint256, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { mintUsdc, startDevnet } from '../src/chain/devnet.js'
import { MULTICALL3_ADDRESS } from '../src/chain/multicall3-abi.js'
import { PERMIT2_ADDRESS, UPTO_PROXY_ADDRESS } from '../src/chain/permit2.js'
import { assertNativeSecp256k1 } from '../src/chain/recover-signer.js'
import { eip3009Types } from '../src/chain/usdc-abi.js'
import { loadConfig } from '../src/config.js'
import { createDb } from '../src/db/create-db.js'
import type { Payment } from '../src/db/database.js'
import { migrateToLatest } from '../src/db/migrate.js'
import { createDeps } from '../src/deps.js'
import { buildProxyApp } from '../src/http/proxy-app.js'
import { loadHandlerRegistry } from '../src/pool/handler-registry.js'
import { uptoDigest, uptoNonceHex, type UptoAuthorization } from '../src/schemes/upto/upto-scheme.js'
import { seedHostedServices } from '../src/services/hosted-seed.js'
import { announceRegistryChange } from '../src/services/registry-events.js'
import { aggregate3Data, settleCall, transferCallData } from '../src/services/settlement/chain-ops.js'
import { exactPayments } from './bench-payments.js'
import { dropRedisPrefix } from './cleanup.js'
import { startReferenceStack } from './reference-stack.js'

assertNativeSecp256k1()
const secp = createRequire(import.meta.url)('secp256k1') as {
  ecdsaSign(msg: Uint8Array, key: Uint8Array): { signature: Uint8Array; recid: number }
}
const seconds = Number(process.argv[2] ?? 4)
const connections = Number(process.argv[3] ?? 16)
const rounds = Number(process.argv[4] ?? 2)
// BENCH_PORT: another checkout's bench may hold the default
const port = Number(process.env.BENCH_PORT ?? 45931)

const devnet = await startDevnet({ port: 0 })
const schema = `bench_${Date.now().toString(36)}`
const env = {
  DATABASE_URL: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
  DATABASE_SCHEMA: schema,
  REDIS_PREFIX: `tgbench:${schema}`,
  RPC_URL: devnet.rpcUrl,
  PROXY_URL: `http://127.0.0.1:${port}`,
  TOLLGATE_RECEIVER_ADDRESS: devnet.accounts.receiver.address,
  RELAYER_PRIVATE_KEYS: devnet.accounts.relayer.privateKey,
  LOG_LEVEL: 'silent',
  TOLLGATE_MASTER_KEY: randomBytes(32).toString('hex'),
}
const config = loadConfig(env)
const migrationDb = createDb({ databaseUrl: config.databaseUrl, schema, max: 1 })
await migrateToLatest(migrationDb, schema)
await migrationDb.destroy()
const deps = createDeps(config)
const fixtures = new URL('../test/fixtures/handlers', import.meta.url).pathname
const path = '/tollgate/toolbox/echo?msg=hi'
const pub = createPublicClient({ transport: http(devnet.rpcUrl), chain: devnet.chain })
const payer = devnet.accounts.demoPayer
const relayer = createWalletClient({
  account: privateKeyToAccount(devnet.accounts.relayer.privateKey),
  transport: http(devnet.rpcUrl),
  chain: devnet.chain,
})

try {
  await seedHostedServices(deps, await loadHandlerRegistry(fixtures))
  await deps.db
    .updateTable('endpoints')
    .set({ schemes: ['exact', 'upto'] })
    .where('slug', '=', 'echo')
    .execute()
  await announceRegistryChange(deps)
  const approve = await createWalletClient({
    account: privateKeyToAccount(payer.privateKey),
    transport: http(devnet.rpcUrl),
    chain: devnet.chain,
  }).writeContract({
    address: devnet.usdcAddress,
    abi: erc20Abi,
    functionName: 'approve',
    args: [PERMIT2_ADDRESS, maxUint256],
  })
  await pub.waitForTransactionReceipt({ hash: approve })

  const proxy = await buildProxyApp(deps, { logger: false, handlersDir: fixtures })
  await proxy.listen({ port, host: '127.0.0.1' })
  const r = await fetch(`${config.proxyUrl}${path}`)
  const required = JSON.parse(Buffer.from(r.headers.get('payment-required')!, 'base64').toString()) as {
    resource: unknown
    accepts: Array<{ scheme: string; payTo: string; amount: string; extra: { facilitatorAddress: string } }>
  }
  const upto = required.accepts.find((a) => a.scheme === 'upto')!

  const key = Buffer.from(payer.privateKey.slice(2), 'hex')
  type UptoRequirement = (typeof required.accepts)[number]
  /** `count` upto payment headers from `from`, each with its own Permit2 nonce */
  function uptoHeadersFrom(
    from: { address: Hex; privateKey: Hex },
    req: UptoRequirement,
    resource: unknown,
    count: number,
  ): string[] {
    const k = Buffer.from(from.privateKey.slice(2), 'hex')
    const now = BigInt(Math.floor(Date.now() / 1000))
    return Array.from({ length: count }, () => {
      const a: UptoAuthorization = {
        from: from.address.toLowerCase() as Hex,
        token: devnet.usdcAddress.toLowerCase() as Hex,
        amount: BigInt(req.amount),
        spender: UPTO_PROXY_ADDRESS.toLowerCase() as Hex,
        nonce: BigInt(`0x${randomBytes(32).toString('hex')}`),
        deadline: now + 250n,
        to: req.payTo.toLowerCase() as Hex,
        facilitator: req.extra.facilitatorAddress.toLowerCase() as Hex,
        validAfter: 0n,
      }
      const { signature, recid } = secp.ecdsaSign(Buffer.from(uptoDigest(a, devnet.chainId).slice(2), 'hex'), k)
      const payload = {
        signature: `0x${Buffer.from(signature).toString('hex')}${(27 + recid).toString(16)}`,
        permit2Authorization: {
          from: getAddress(a.from),
          permitted: { token: getAddress(a.token), amount: a.amount.toString() },
          spender: UPTO_PROXY_ADDRESS,
          nonce: a.nonce.toString(),
          deadline: a.deadline.toString(),
          witness: { to: getAddress(a.to), facilitator: getAddress(a.facilitator), validAfter: '0' },
        },
      }
      const body = { x402Version: 2, resource, accepted: req, payload }
      return Buffer.from(JSON.stringify(body)).toString('base64')
    })
  }
  const uptoHeaders = (count: number) => uptoHeadersFrom(payer, upto, required.resource, count)
  const exactHeaders = (count: number) =>
    exactPayments(payer, config.chain, required, count).map((p) => Buffer.from(JSON.stringify(p)).toString('base64'))

  async function run(name: string, headers: string[], url = `${config.proxyUrl}${path}`, conns = connections) {
    let i = 0
    const res = await autocannon({
      url,
      connections: conns,
      duration: seconds,
      requests: [
        {
          setupRequest: (req: autocannon.Request) => ({
            ...req,
            headers: { 'payment-signature': headers[i++ % headers.length]! },
          }),
        },
      ],
    })
    return {
      name,
      rps: res['2xx'] / (res.duration || seconds),
      p50: res.latency.p50,
      p99: res.latency.p99,
      non2xx: res.non2xx,
    }
  }
  // warm both paths (balance cache, Permit2 allowance cache, handler processes)
  for (const h of [...exactHeaders(20), ...uptoHeaders(20)])
    await (await fetch(`${config.proxyUrl}${path}`, { headers: { 'payment-signature': h } })).arrayBuffer()

  const perCase = Math.ceil(seconds * 1500)
  const rows: Awaited<ReturnType<typeof run>>[] = []
  for (let round = 0; round < rounds; round++) {
    rows.push(await run('exact', exactHeaders(perCase)))
    rows.push(await run('upto', uptoHeaders(perCase)))
  }
  console.log(`paid calls to a trivial hosted handler, ${connections} connections, ${seconds} s per case`)
  console.log('| case | paid calls/s | p50 ms | p99 ms | non-2xx |\n|---|---|---|---|---|')
  for (const x of rows) console.log(`| ${x.name} | ${x.rps.toFixed(0)} | ${x.p50} | ${x.p99} | ${x.non2xx} |`)
  const median = (name: string) => {
    const v = rows
      .filter((x) => x.name === name)
      .map((x) => x.rps)
      .sort((a, b) => a - b)
    return v[Math.floor(v.length / 2)]!
  }
  console.log(`upto/exact (medians): ${((median('upto') / median('exact')) * 100).toFixed(1)}%`)

  if (process.env.BENCH_REFERENCE !== '0') {
    // the official upto stack: @x402/express with @x402/evm's upto server scheme and an in-process
    // facilitator (its account's nonces queued by viem's nonce manager), on the same devnet; one
    // funded, Permit2-approved payer per connection, so what fails is the facilitator's
    const payers: Array<{ address: Hex; privateKey: Hex }> = []
    for (let c = 0; c < connections; c++) {
      const privateKey = generatePrivateKey()
      const account = privateKeyToAccount(privateKey)
      await mintUsdc(devnet.rpcUrl, account.address, 10_000_000n)
      await pub.request({
        method: 'anvil_setBalance' as never,
        params: [account.address, '0x16345785D8A0000'] as never,
      })
      const hash = await createWalletClient({
        account,
        transport: http(devnet.rpcUrl),
        chain: devnet.chain,
      }).writeContract({
        address: devnet.usdcAddress,
        abi: erc20Abi,
        functionName: 'approve',
        args: [PERMIT2_ADDRESS, maxUint256],
      })
      await pub.waitForTransactionReceipt({ hash })
      payers.push({ address: account.address, privateKey })
    }
    const ref = await startReferenceStack(
      devnet,
      devnet.accounts.receiver.address,
      devnet.accounts.relayers[2]!.privateKey,
      'upto',
    )
    const refRequired = JSON.parse(
      Buffer.from((await fetch(ref.url)).headers.get('payment-required')!, 'base64').toString(),
    ) as typeof required
    const refUpto = refRequired.accepts.find((a) => a.scheme === 'upto')!
    const refHeaders = (count: number) => {
      const each = payers.map((p) =>
        uptoHeadersFrom(p, refUpto, refRequired.resource, Math.ceil(count / payers.length)),
      )
      return Array.from({ length: count }, (_, n) => each[n % payers.length]![Math.floor(n / payers.length)]!)
    }
    const refRows = [
      await run('reference upto: @x402/express + facilitator', refHeaders(seconds * 300), ref.url),
      await run('reference upto, 1 connection', refHeaders(seconds * 300), ref.url, 1),
      await run('upto, 1 connection', uptoHeaders(seconds * 1500), `${config.proxyUrl}${path}`, 1),
    ]
    await ref.close()
    console.log('\n| case | paid calls/s | p50 ms | p99 ms | non-2xx |\n|---|---|---|---|---|')
    for (const x of refRows) console.log(`| ${x.name} | ${x.rps.toFixed(0)} | ${x.p50} | ${x.p99} | ${x.non2xx} |`)
    const times = (a: number, b: number) => (b > 0 ? `${(a / b).toFixed(1)}x` : 'n/a (the reference paid no call)')
    console.log(
      `upto vs the official upto stack, ${connections} connections: ${times(median('upto'), refRows[0]!.rps)}`,
    )
    console.log(`upto vs the official upto stack, 1 connection: ${times(refRows[2]!.rps, refRows[1]!.rps)}`)
  }
  await proxy.close()

  // --- settlement gas ---------------------------------------------------------------------
  const payerAccount = privateKeyToAccount(payer.privateKey)
  const now = Math.floor(Date.now() / 1000)
  async function exactPayment(): Promise<Payment> {
    const nonce = `0x${randomBytes(32).toString('hex')}` as Hex
    const msg = {
      from: payer.address,
      to: devnet.accounts.receiver.address,
      value: 1000n,
      validAfter: 0n,
      validBefore: BigInt(now + 3600),
      nonce,
    }
    const signature = await payerAccount.signTypedData({
      domain: { name: 'USDC', version: '2', chainId: devnet.chainId, verifyingContract: devnet.usdcAddress },
      types: { TransferWithAuthorization: eip3009Types.TransferWithAuthorization },
      primaryType: 'TransferWithAuthorization',
      message: msg,
    })
    return {
      scheme: 'exact',
      payer: payer.address.toLowerCase(),
      pay_to: msg.to.toLowerCase(),
      value: '1000',
      valid_after: '0',
      valid_before: String(msg.validBefore),
      nonce,
      signature,
    } as unknown as Payment
  }
  function uptoPayment(charge: bigint): Payment {
    const a: UptoAuthorization = {
      from: payer.address.toLowerCase() as Hex,
      token: devnet.usdcAddress.toLowerCase() as Hex,
      amount: 1000n,
      spender: UPTO_PROXY_ADDRESS.toLowerCase() as Hex,
      nonce: BigInt(`0x${randomBytes(32).toString('hex')}`),
      deadline: BigInt(now + 3600),
      to: devnet.accounts.receiver.address.toLowerCase() as Hex,
      facilitator: devnet.accounts.relayer.address.toLowerCase() as Hex,
      validAfter: 0n,
    }
    const { signature, recid } = secp.ecdsaSign(Buffer.from(uptoDigest(a, devnet.chainId).slice(2), 'hex'), key)
    return {
      scheme: 'upto',
      payer: a.from,
      asset: a.token,
      pay_to: a.to,
      value: charge.toString(),
      max_value: '1000',
      facilitator: a.facilitator,
      valid_after: '0',
      valid_before: a.deadline.toString(),
      nonce: uptoNonceHex(a.nonce),
      signature: `0x${Buffer.from(signature).toString('hex')}${(27 + recid).toString(16)}`,
    } as unknown as Payment
  }
  async function gasOf(to: `0x${string}`, data: Hex): Promise<bigint> {
    const hash = await relayer.sendTransaction({ to, data })
    const rc = await pub.waitForTransactionReceipt({ hash })
    if (rc.status !== 'success') throw new Error('reverted')
    return rc.gasUsed
  }
  const usdc = getAddress(devnet.usdcAddress)
  const single = {
    exact: Number(await gasOf(usdc, transferCallData(await exactPayment()))),
    upto: Number(await gasOf(UPTO_PROXY_ADDRESS, settleCall(uptoPayment(700n)).callData)),
  }
  const exact50 = await Promise.all(Array.from({ length: 50 }, exactPayment))
  const upto50 = Array.from({ length: 50 }, (_, i) => uptoPayment(500n + BigInt(i)))
  const batch = {
    exact: Number(await gasOf(MULTICALL3_ADDRESS, aggregate3Data(usdc, exact50))) / 50,
    upto: Number(await gasOf(MULTICALL3_ADDRESS, aggregate3Data(usdc, upto50))) / 50,
  }
  console.log('\nsettlement gas per payment (the payer already has a Permit2 nonce word and allowance in use)')
  console.log('| | exact | upto | upto/exact |\n|---|---|---|---|')
  console.log(`| single tx | ${single.exact} | ${single.upto} | ${((single.upto / single.exact) * 100).toFixed(0)}% |`)
  console.log(
    `| batch of 50 | ${batch.exact.toFixed(0)} | ${batch.upto.toFixed(0)} | ${((batch.upto / batch.exact) * 100).toFixed(0)}% |`,
  )
} finally {
  await sql`drop schema if exists ${sql.id(schema)} cascade`.execute(deps.db).catch(() => {})
  await dropRedisPrefix(deps.redis, env.REDIS_PREFIX).catch(() => {})
  await deps.close()
  await devnet.stop()
}

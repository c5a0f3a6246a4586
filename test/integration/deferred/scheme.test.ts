/**
 * The `deferred` scheme through the proxy on the dev chain: the requirement an endpoint that
 * enables it offers (with and without PAYER-IDENTIFIER), vouchers aggregated call after call, the
 * refusals (each charging nothing), concurrent calls with the same voucher, and collection.
 */
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { sql } from 'kysely'
import {
  createPublicClient,
  createTestClient,
  createWalletClient,
  encodeAbiParameters,
  getAddress,
  http,
  type Address,
} from 'viem'
import { DEVNET_ESCROW_THAWING_PERIOD } from '../../../src/chain/devnet.js'
import { claimDeferred } from '../../../src/ledger/transitions.js'
import { DeferredCollector } from '../../../src/services/deferred-collect/collector.js'
import { privateKeyToAccount, generatePrivateKey } from 'viem/accounts'
import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import solc from 'solc'
import {
  depositAuthorizationTypedData,
  permitTypedData,
  voucherTypedData,
  type DeferredVoucher,
} from '../../../src/schemes/deferred/typed-data.js'
import { deferredEscrowAbi } from '../../../src/schemes/deferred/escrow-abi.js'
import { announceRegistryChange } from '../../../src/services/registry-events.js'
import { usdcAbi } from '../../../src/chain/usdc-abi.js'
import { startWorkers } from '../../../workers/index.js'
import { deferredBuyer, deferredHeader, voucherWire } from '../../helpers/deferred-buyer.js'
import { decodeRequired } from '../../helpers/pay.js'
import { startTestPlatform } from '../../helpers/platform.js'
import { until } from '../../helpers/until.js'

const fixtures = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../fixtures/handlers')
const ECHO = '/tollgate/toolbox/echo?msg=hi'
const PRICE = 1000n

// the worker collects a seller once 50 calls are waiting (and never for age during the test)
const platform = await startTestPlatform(t, {
  proxy: { handlersDir: fixtures },
  env: { DEFERRED_COLLECT_THRESHOLD: String(50n * PRICE), DEFERRED_COLLECT_MAX_AGE_SECONDS: '86400' },
})
const { deps, proxy, devnet } = platform
const seller = getAddress(devnet.accounts.receiver.address)
const pub = createPublicClient({ chain: devnet.chain, transport: http(devnet.rpcUrl) })
const usdcBalance = (who: Address) =>
  pub.readContract({ address: devnet.usdcAddress, abi: usdcAbi, functionName: 'balanceOf', args: [who] })

// the seller enables deferred on the echo endpoint; the proxy reloads on the announcement
await deps.db
  .updateTable('endpoints')
  .set({ schemes: ['exact', 'deferred'] })
  .where('slug', 'in', ['echo', 'throws'])
  .execute()
await announceRegistryChange(deps)
await until(
  'the proxy offers deferred',
  async () => decodeRequired((await proxy.inject(ECHO)).headers['payment-required'] as string).accepts.length === 2,
)

const countPayments = async () =>
  Number(
    (
      await deps.db
        .selectFrom('payments')
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  )
/** the 402 for `buyer` (PAYER-IDENTIFIER) and its deferred requirement */
const challenge = async (buyer?: Address) => {
  const r = await proxy.inject({ url: ECHO, headers: buyer ? { 'payer-identifier': buyer } : {} })
  const required = decodeRequired(r.headers['payment-required'] as string)
  return {
    status: r.statusCode,
    body: r.json(),
    required,
    deferred: required.accepts.find((a) => a.scheme === 'deferred')!,
  }
}
const pay = async (buyer: Address, v: DeferredVoucher, signature: string, extra: Record<string, unknown> = {}) => {
  const { required, deferred } = await challenge(buyer)
  return proxy.inject({
    url: ECHO,
    headers: {
      'payer-identifier': buyer,
      'payment-signature': deferredHeader(required, deferred, { voucher: voucherWire(v), signature, ...extra }),
    },
  })
}
const reasonOf = (r: { headers: Record<string, unknown> }) =>
  decodeRequired(r.headers['payment-required'] as string).error
const collector = () =>
  new DeferredCollector(deps, { escrow: devnet.deferredEscrowAddress, log: { info() {}, warn() {}, error() {} } })
const statusesOf = async (buyer: Address) =>
  (
    await deps.db
      .selectFrom('payments')
      .select('status')
      .where('payer', '=', buyer.toLowerCase())
      .orderBy('valid_after')
      .execute()
  ).map((r) => r.status)
const callsFor = async (buyer: Awaited<ReturnType<typeof deferredBuyer>>, n: number) => {
  const { deferred } = await challenge(buyer.address)
  let previous: DeferredVoucher | undefined
  for (let i = 0; i < n; i++) {
    const v = buyer.voucher(deferred, previous)
    const r = await pay(buyer.address, v, await buyer.sign(v))
    if (r.statusCode !== 200) throw new Error(`call ${i}: ${r.body}`)
    previous = v
  }
  return previous!
}

t.test('an endpoint that enables deferred offers it in v2 after exact; v1 stays exact', async (t) => {
  const { status, body, required, deferred } = await challenge()
  t.equal(status, 402)
  t.same(
    body.accepts.map((a: { scheme: string }) => a.scheme),
    ['exact'],
  )
  t.same(
    required.accepts.map((a) => a.scheme),
    ['exact', 'deferred'],
  )
  t.same(deferred.extra, {
    escrow: getAddress(devnet.deferredEscrowAddress),
    name: 'USDC',
    version: '2',
    voucherStorage: 'server',
  })
  t.equal(deferred.amount, PRICE.toString())
  t.equal(deferred.payTo, seller)
})

t.test('end to end: a deposit, 50 aggregated calls, one collection pays the seller exactly 50 x price', async (t) => {
  const buyer = await deferredBuyer(devnet, 10n ** 6n)
  await buyer.deposit(seller, 200_000n)
  const sellerBefore = await usdcBalance(seller)
  let previous: DeferredVoucher | undefined
  for (let i = 0; i < 50; i++) {
    // as a buyer would: the latest voucher from the challenge (PAYER-IDENTIFIER), aggregated by one price
    const { deferred } = await challenge(buyer.address)
    const latest = deferred.extra.voucher as Record<string, string | number> | undefined
    if (i > 0)
      t.equal(BigInt(latest!.valueAggregate), previous!.valueAggregate, 'the challenge shows the latest voucher')
    const v = buyer.voucher(deferred, previous)
    const r = await pay(buyer.address, v, await buyer.sign(v))
    if (r.statusCode !== 200) t.fail(`call ${i}: ${r.statusCode} ${r.body}`)
    previous = v
  }
  const workers = await startWorkers(deps, {
    everyMs: { 'deferred-collect': 200 },
    log: { info() {}, warn() {}, error() {} },
  })
  t.teardown(() => workers.close())
  await until('the 50 payments collected', async () => {
    const open = await deps.db
      .selectFrom('payments')
      .select('status')
      .where('payer', '=', buyer.address.toLowerCase())
      .where('status', '!=', 'settled')
      .execute()
    return open.length === 0
  })
  await workers.close()
  t.equal((await usdcBalance(seller)) - sellerBefore, 50n * PRICE, 'the seller got exactly 50 x price')
  const txs = await deps.db
    .selectFrom('payments')
    .select('tx_hash')
    .distinct()
    .where('payer', '=', buyer.address.toLowerCase())
    .execute()
  t.equal(txs.length, 1, 'in one transaction')
  const account = await pub.readContract({
    address: devnet.deferredEscrowAddress,
    abi: deferredEscrowAbi,
    functionName: 'getAccount',
    args: [buyer.address, seller, devnet.usdcAddress],
  })
  t.equal(account.balance, 200_000n - 50n * PRICE, 'taken from the buyer escrow')
  const stored = await deps.db
    .selectFrom('deferred_vouchers')
    .select(['collected'])
    .where('buyer', '=', buyer.address.toLowerCase())
    .orderBy('nonce', 'desc')
    .limit(1)
    .executeTakeFirstOrThrow()
  t.equal(stored.collected, String(50n * PRICE), 'the store knows what was collected')
})

t.test('aggregated vouchers pay call after call; PAYER-IDENTIFIER brings back the latest', async (t) => {
  const buyer = await deferredBuyer(devnet, 10n ** 6n)
  await buyer.deposit(seller, 100_000n)
  const first = await challenge(buyer.address)
  t.same(
    first.deferred.extra.account,
    { balance: '100000', assetAllowance: '0', assetPermitNonce: '0' },
    'the escrow account, before any voucher',
  )
  t.notOk(first.deferred.extra.voucher, 'no voucher yet')
  let previous: DeferredVoucher | undefined
  const before = await countPayments()
  for (let i = 0; i < 5; i++) {
    const v = buyer.voucher(first.deferred, previous)
    const r = await pay(buyer.address, v, await buyer.sign(v))
    t.equal(r.statusCode, 200, r.body)
    previous = v
  }
  t.equal(await countPayments(), before + 5)
  const rows = await deps.db
    .selectFrom('payments')
    .selectAll()
    .where('payer', '=', buyer.address.toLowerCase())
    .execute()
  t.same(new Set(rows.map((r) => `${r.scheme}/${r.status}/${r.value}`)), new Set(['deferred/served/1000']))
  const again = await challenge(buyer.address)
  t.match(again.deferred.extra.voucher, { id: previous!.id, nonce: 4, valueAggregate: '5000', buyer: buyer.address })
  t.equal(again.deferred.extra.signature, await buyer.sign(previous!))
})

t.test('refusals name what to fix and charge nothing', async (t) => {
  const buyer = await deferredBuyer(devnet, 10n ** 6n)
  await buyer.deposit(seller, 3_000n)
  const { deferred } = await challenge(buyer.address)
  const v0 = buyer.voucher(deferred)
  t.equal((await pay(buyer.address, v0, await buyer.sign(v0))).statusCode, 200)
  const before = await countPayments()
  const cases: Array<[string, DeferredVoucher, string | undefined, string]> = [
    ['replayed', v0, undefined, 'invalid_deferred_evm_payload_voucher_stale'],
    [
      'stale nonce',
      buyer.voucher(deferred, v0, { nonce: 0n }),
      undefined,
      'invalid_deferred_evm_payload_voucher_stale',
    ],
    [
      'skipped nonce',
      buyer.voucher(deferred, v0, { nonce: 5n }),
      undefined,
      'invalid_deferred_evm_payload_voucher_stale',
    ],
    [
      'wrong aggregate',
      buyer.voucher(deferred, v0, { valueAggregate: 2_500n }),
      undefined,
      'invalid_deferred_evm_payload_voucher_value',
    ],
    [
      'earlier timestamp',
      buyer.voucher(deferred, v0, { timestamp: v0.timestamp }),
      undefined,
      'invalid_deferred_evm_payload_voucher_timestamp',
    ],
    [
      'signed by another key',
      buyer.voucher(deferred, v0),
      generatePrivateKey(),
      'invalid_deferred_evm_payload_signature',
    ],
    [
      'unknown escrow',
      buyer.voucher(deferred, v0, { escrow: '0x000000000000000000000000000000000000dead' }),
      undefined,
      'invalid_deferred_evm_payload_voucher_mismatch',
    ],
    [
      'another seller',
      buyer.voucher(deferred, undefined, { seller: '0x000000000000000000000000000000000000bEEF' }),
      undefined,
      'invalid_deferred_evm_payload_voucher_mismatch',
    ],
    [
      'a new voucher over the price',
      buyer.voucher(deferred, undefined, { valueAggregate: 2n * PRICE }),
      undefined,
      'invalid_deferred_evm_payload_voucher_value',
    ],
  ]
  for (const [what, v, key, reason] of cases) {
    const signature = key
      ? await privateKeyToAccount(key as `0x${string}`).signTypedData(
          (await import('../../../src/schemes/deferred/typed-data.js')).voucherTypedData(v),
        )
      : await buyer.sign(v)
    const r = await pay(buyer.address, v, signature)
    t.equal(r.statusCode, 402, what)
    t.equal(reasonOf(r), reason, what)
    t.equal(r.json().error, reason, `${what}: the v1 body names it too`)
  }
  // over the balance: 3 calls fit the 3000 deposited, the 4th does not
  let prev = v0
  for (let i = 0; i < 2; i++) {
    const v = buyer.voucher(deferred, prev)
    t.equal((await pay(buyer.address, v, await buyer.sign(v))).statusCode, 200)
    prev = v
  }
  const over = buyer.voucher(deferred, prev)
  const r = await pay(buyer.address, over, await buyer.sign(over))
  t.equal(reasonOf(r), 'invalid_deferred_evm_insufficient_escrow_balance')
  t.match(r.json().message, /deposit/)
  // a deposit authorization that is not the buyer's is refused before anything is sent
  const withDeposit = await pay(buyer.address, over, await buyer.sign(over), {
    deposit: {
      authorization: {
        buyer: buyer.address,
        seller,
        asset: devnet.usdcAddress,
        amount: '1000',
        nonce: `0x${'11'.repeat(32)}`,
        expiry: 9999999999,
        signature: `0x${'22'.repeat(65)}`,
      },
    },
  })
  t.equal(reasonOf(withDeposit), 'invalid_deferred_evm_payload_deposit')
  t.match(withDeposit.json().message, /deposit\.authorization\.signature/)
  t.equal(await countPayments(), before + 2, 'only the two good vouchers were charged')
})

t.test(
  'a deposit in the payload (permit, then depositWithAuthorization) is executed before the voucher counts',
  async (t) => {
    const buyer = await deferredBuyer(devnet, 10n ** 6n) // USDC, no approval, nothing in the escrow
    const { deferred } = await challenge(buyer.address)
    t.match(deferred.extra.account, { balance: '0', assetAllowance: '0', assetPermitNonce: '0' })
    const expiry = BigInt(Math.floor(Date.now() / 1000) + 3600)
    const authorization = {
      buyer: buyer.address,
      seller,
      asset: devnet.usdcAddress,
      amount: 10_000n,
      nonce: `0x${randomBytes(32).toString('hex')}` as `0x${string}`,
      expiry,
    }
    const permit = {
      owner: buyer.address,
      spender: devnet.deferredEscrowAddress,
      value: 10_000n,
      nonce: 0n,
      deadline: expiry,
    }
    const deposit = {
      authorization: {
        ...authorization,
        amount: '10000',
        expiry: Number(expiry),
        signature: await buyer.account.signTypedData(
          depositAuthorizationTypedData(authorization, devnet.chainId, devnet.deferredEscrowAddress),
        ),
      },
      permit: {
        ...permit,
        value: '10000',
        nonce: '0',
        deadline: Number(expiry),
        domain: { name: 'USDC', version: '2' },
        signature: await buyer.account.signTypedData(
          permitTypedData(permit, { name: 'USDC', version: '2', chainId: devnet.chainId, address: devnet.usdcAddress }),
        ),
      },
    }
    const v0 = buyer.voucher(deferred)
    const r = await pay(buyer.address, v0, await buyer.sign(v0), { deposit })
    t.equal(r.statusCode, 200, r.body)
    const account = await pub.readContract({
      address: devnet.deferredEscrowAddress,
      abi: deferredEscrowAbi,
      functionName: 'getAccount',
      args: [buyer.address, seller, devnet.usdcAddress],
    })
    t.equal(account.balance, 10_000n, 'deposited by the platform, gasless for the buyer')
    // the same deposit again (its nonce is used on chain): refused, nothing charged
    const v1 = buyer.voucher(deferred, v0)
    const again = await pay(buyer.address, v1, await buyer.sign(v1), { deposit })
    t.equal(reasonOf(again), 'invalid_deferred_evm_payload_deposit')
    t.match(again.json().message, /already used/)
    t.same(await statusesOf(buyer.address), ['served'])
  },
)

t.test(
  'a call that fails gives its voucher back: nothing charged, the buyer aggregates onto the one before',
  async (t) => {
    const buyer = await deferredBuyer(devnet, 10n ** 6n)
    await buyer.deposit(seller, 100_000n)
    const { deferred } = await challenge(buyer.address)
    const v0 = buyer.voucher(deferred)
    t.equal((await pay(buyer.address, v0, await buyer.sign(v0))).statusCode, 200)
    const thrown = decodeRequired(
      (await proxy.inject('/tollgate/toolbox/throws')).headers['payment-required'] as string,
    )
    const throwsDeferred = thrown.accepts.find((a) => a.scheme === 'deferred')!
    const v1 = buyer.voucher(throwsDeferred, v0)
    const failed = await proxy.inject({
      url: '/tollgate/toolbox/throws',
      headers: {
        'payment-signature': deferredHeader(thrown, throwsDeferred, {
          voucher: voucherWire(v1),
          signature: await buyer.sign(v1),
        }),
      },
    })
    t.ok(failed.statusCode >= 500, `the handler failed (${failed.statusCode})`)
    t.same(
      await deps.db
        .selectFrom('payments')
        .select('status')
        .where('payer', '=', buyer.address.toLowerCase())
        .orderBy('valid_after')
        .execute(),
      [{ status: 'served' }, { status: 'voided' }],
    )
    const again = await challenge(buyer.address)
    t.match(
      again.deferred.extra.voucher,
      { nonce: 0, valueAggregate: String(PRICE) },
      'the latest voucher is the one before the failed call',
    )
    const retry = buyer.voucher(deferred, v0)
    t.equal(
      (await pay(buyer.address, retry, await buyer.sign(retry))).statusCode,
      200,
      'nonce 1 again, with a later timestamp',
    )
  },
)

t.test('a contract buyer (ERC-1271): its vouchers are checked by isValidSignature through RPC', async (t) => {
  const source = readFileSync(new URL('../../fixtures/smart-wallet/TestSmartWallet.sol', import.meta.url), 'utf8')
  const out = JSON.parse(
    solc.compile(
      JSON.stringify({
        language: 'Solidity',
        sources: { 'w.sol': { content: source } },
        settings: { evmVersion: 'cancun', outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object'] } } },
      }),
    ),
  )
  const compiled = out.contracts['w.sol'].TestSmartWallet
  const owner = privateKeyToAccount(generatePrivateKey())
  const deployer = createWalletClient({
    account: privateKeyToAccount(devnet.accounts.faucet.privateKey),
    chain: devnet.chain,
    transport: http(devnet.rpcUrl),
  })
  const hash = await deployer.deployContract({
    abi: compiled.abi,
    bytecode: `0x${compiled.evm.bytecode.object}`,
    args: [owner.address],
  })
  const wallet = (await pub.waitForTransactionReceipt({ hash })).contractAddress!
  const funder = await deferredBuyer(devnet, 10n ** 6n)
  await funder.depositFor(wallet, seller, 10_000n)
  const wrap = (ecdsa: `0x${string}`) => encodeAbiParameters([{ type: 'uint256' }, { type: 'bytes' }], [0n, ecdsa])
  const { deferred } = await challenge(wallet)
  t.match(deferred.extra.account, { balance: '10000' })
  const v0 = funder.voucher(deferred, undefined, { buyer: wallet })
  const stranger = await pay(
    wallet,
    v0,
    wrap(await privateKeyToAccount(generatePrivateKey()).signTypedData(voucherTypedData(v0))),
  )
  t.equal(reasonOf(stranger), 'invalid_deferred_evm_payload_signature', 'the wallet says no to a stranger')
  const r = await pay(wallet, v0, wrap(await owner.signTypedData(voucherTypedData(v0))))
  t.equal(r.statusCode, 200, r.body)
  t.same(await statusesOf(wallet), ['served'])
})

t.test('concurrent calls with the same voucher: exactly one is accepted', async (t) => {
  const buyer = await deferredBuyer(devnet, 10n ** 6n)
  await buyer.deposit(seller, 100_000n)
  const { required, deferred } = await challenge(buyer.address)
  const v = buyer.voucher(deferred)
  const header = deferredHeader(required, deferred, { voucher: voucherWire(v), signature: await buyer.sign(v) })
  // across two proxy processes on the same Postgres: the store decides, not a process
  const second = await platform.startProxy({ handlersDir: fixtures })
  const answers = await Promise.all(
    Array.from({ length: 8 }, (_, i) =>
      (i % 2 ? second.app : proxy).inject({ url: ECHO, headers: { 'payment-signature': header } }),
    ),
  )
  t.equal(answers.filter((a) => a.statusCode === 200).length, 1, 'one accepted')
  t.same(
    new Set(answers.filter((a) => a.statusCode !== 200).map(reasonOf)),
    new Set(['invalid_deferred_evm_payload_voucher_stale']),
  )
  // and the same next nonce signed twice (different timestamps): one of the two
  const a = buyer.voucher(deferred, v)
  const b = buyer.voucher(deferred, v)
  const [ra, rb] = await Promise.all([
    pay(buyer.address, a, await buyer.sign(a)),
    pay(buyer.address, b, await buyer.sign(b)),
  ])
  t.same([ra.statusCode, rb.statusCode].sort(), [200, 402])
  t.equal(
    Number(
      (
        await deps.db
          .selectFrom('payments')
          .select((eb) => eb.fn.countAll().as('n'))
          .where('payer', '=', buyer.address.toLowerCase())
          .executeTakeFirstOrThrow()
      ).n,
    ),
    2,
  )
})

t.test(
  'partial collection: an escrow short at collection time pays what it holds; what it cannot is failed uncollectable',
  async (t) => {
    const buyer = await deferredBuyer(devnet, 10n ** 6n)
    await buyer.deposit(seller, 5n * PRICE)
    const last = await callsFor(buyer, 5)
    // the buyer withdraws 3 prices' worth after the thawing period, before the seller collects
    const testClient = createTestClient({ chain: devnet.chain, mode: 'anvil', transport: http(devnet.rpcUrl) })
    await buyer.send('thaw', [seller, devnet.usdcAddress, 3n * PRICE])
    await testClient.increaseTime({ seconds: Number(DEVNET_ESCROW_THAWING_PERIOD) + 1 })
    await testClient.mine({ blocks: 1 })
    await buyer.send('withdraw', [seller, devnet.usdcAddress])
    await collector().runOnce({ force: true })
    t.same(
      await statusesOf(buyer.address),
      ['settled', 'settled', 'failed', 'failed', 'failed'],
      'the two calls the escrow covered are settled; the three it cannot pay (its account is empty) failed',
    )
    // (that run also collected what the earlier tests left served; from here only this buyer's count)
    const sellerBefore = (await usdcBalance(seller)) - 2n * PRICE
    const blocked = await deps.db
      .selectFrom('payer_blocks')
      .select('reason')
      .where('payer', '=', buyer.address.toLowerCase())
      .executeTakeFirst()
    t.equal(blocked?.reason, 'uncollectable', 'the buyer is blocked')
    // a deposit afterwards: the failed calls stay failed, but the stored voucher can still be collected
    await buyer.deposit(seller, 3n * PRICE)
    await collector().runOnce({ force: true })
    t.same(await statusesOf(buyer.address), ['settled', 'settled', 'failed', 'failed', 'failed'], 'final')
    const r = await collector().collectVoucher(last.id, last.nonce, async () => true)
    t.equal(r.outcome, 'collected', 'the facilitator settle collects the stored voucher')
    t.equal((await usdcBalance(seller)) - sellerBefore, 5n * PRICE, 'nothing lost, nothing twice')
  },
)

t.test('a collection whose worker died (kill -9) is decided from the chain', async (t) => {
  const buyer = await deferredBuyer(devnet, 10n ** 6n)
  await buyer.deposit(seller, 10_000n)
  const last = await callsFor(buyer, 3)
  const other = await deferredBuyer(devnet, 10n ** 6n)
  await other.deposit(seller, 10_000n)
  await callsFor(other, 2)
  // the dead worker claimed both buyers' payments; its collectMany of the first buyer's voucher was mined, the second never sent
  await claimDeferred(deps.db, { payTo: seller.toLowerCase(), asset: devnet.usdcAddress.toLowerCase(), limit: 1000 })
  await buyer.send('collect', [last, await buyer.sign(last)])
  await sql`update payments set updated_at = now() - interval '1 hour' where payer in (${buyer.address.toLowerCase()}, ${other.address.toLowerCase()})`.execute(
    deps.db,
  )
  const stats = await new DeferredCollector(deps, {
    escrow: devnet.deferredEscrowAddress,
    log: { info() {}, warn() {}, error() {} },
  }).runOnce()
  t.ok(stats.settled >= 3)
  t.same(await statusesOf(buyer.address), ['settled', 'settled', 'settled'], 'mined: settled')
  t.same(await statusesOf(other.address), ['served', 'served'], 'never sent: back to served, collected on a later run')
  await collector().runOnce({ force: true })
  t.same(await statusesOf(other.address), ['settled', 'settled'])
})

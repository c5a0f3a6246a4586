/**
 * wrapFetch with a local key and `deferred` on, against the proxy on the dev chain: vouchers
 * aggregated call after call with one deposit in the first payment, collected by the worker's
 * collector; a deposit after a short-balance refusal; concurrent calls to one seller; `exact`
 * where the seller offers no vouchers.
 */
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { createPublicClient, getAddress, http, type Address } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { mintUsdc } from '../../../src/chain/devnet.js'
import { usdcAbi } from '../../../src/chain/usdc-abi.js'
import { wrapFetch } from '../../../src/client.js'
import { deferredEscrowAbi } from '../../../src/schemes/deferred/escrow-abi.js'
import { DeferredCollector } from '../../../src/services/deferred-collect/collector.js'
import { announceRegistryChange } from '../../../src/services/registry-events.js'
import { deferredBuyer } from '../../helpers/deferred-buyer.js'
import { decodeRequired } from '../../helpers/pay.js'
import { startTestPlatform } from '../../helpers/platform.js'
import { until } from '../../helpers/until.js'

const fixtures = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../fixtures/handlers')
const ECHO = '/tollgate/toolbox/echo?msg=hi'
const PRICE = 1000n

const platform = await startTestPlatform(t, {
  proxy: { handlersDir: fixtures },
  env: { DEFERRED_COLLECT_THRESHOLD: String(10_000n * PRICE), DEFERRED_COLLECT_MAX_AGE_SECONDS: '86400' },
})
const { deps, proxy, devnet } = platform
const seller = getAddress(devnet.accounts.receiver.address)
const pub = createPublicClient({ chain: devnet.chain, transport: http(devnet.rpcUrl) })
const usdcBalance = (who: Address) =>
  pub.readContract({ address: devnet.usdcAddress, abi: usdcAbi, functionName: 'balanceOf', args: [who] })
const escrowBalance = async (buyer: Address) =>
  (
    await pub.readContract({
      address: devnet.deferredEscrowAddress,
      abi: deferredEscrowAbi,
      functionName: 'getAccount',
      args: [buyer, seller, devnet.usdcAddress],
    })
  ).balance

await deps.db
  .updateTable('endpoints')
  .set({ schemes: ['exact', 'deferred'] })
  .where('slug', '=', 'echo')
  .execute()
await announceRegistryChange(deps)
await until(
  'the proxy offers deferred',
  async () => decodeRequired((await proxy.inject(ECHO)).headers['payment-required'] as string).accepts.length === 2,
)
const url = `${platform.proxyUrl}${ECHO}`

/** a fresh key holding `usdc` test USDC and no gas: every deposit goes through the payment */
const newKey = async (usdc: bigint) => {
  const key = generatePrivateKey()
  const address = privateKeyToAccount(key).address
  await mintUsdc(devnet.rpcUrl, address, usdc)
  return { key, address }
}
const statusesOf = async (buyer: Address) =>
  (await deps.db.selectFrom('payments').select('status').where('payer', '=', buyer.toLowerCase()).execute()).map(
    (r) => r.status,
  )

t.test(
  '20 calls: one deposit in the first payment, one voucher aggregated to 20 x price, one collection',
  async (t) => {
    const me = await newKey(10n ** 6n)
    const pay = wrapFetch(fetch, { privateKey: me.key, deferred: { depositAmount: 50_000n } })
    const sellerBefore = await usdcBalance(seller)
    const ids = new Set<string>()
    for (let i = 0; i < 20; i++) {
      const res = await pay(url)
      t.equal(res.status, 200, `call ${i}`)
      t.match(await res.json(), { echo: { msg: 'hi' } })
      const p = res.payment!
      t.match(
        p,
        {
          scheme: 'deferred',
          header: 'PAYMENT-SIGNATURE',
          amount: '1000',
          voucher: { nonce: String(i), valueAggregate: String(BigInt(i + 1) * PRICE) },
        },
        `call ${i} aggregates`,
      )
      t.equal(
        p.deposit,
        i === 0 ? '50000' : undefined,
        i === 0 ? 'the first payment deposits' : 'no deposit after the first',
      )
      ids.add(p.voucher!.id)
    }
    t.equal(ids.size, 1, 'one voucher id')
    t.equal(await escrowBalance(me.address), 50_000n, 'the deposit landed, gasless for the buyer')
    const head = await deps.db
      .selectFrom('deferred_vouchers')
      .select(['value_aggregate', 'nonce'])
      .where('buyer', '=', me.address.toLowerCase())
      .orderBy('nonce', 'desc')
      .limit(1)
      .executeTakeFirstOrThrow()
    t.same(
      { aggregate: head.value_aggregate, nonce: head.nonce },
      { aggregate: String(20n * PRICE), nonce: '19' },
      'the voucher store holds the aggregate',
    )
    t.same(await statusesOf(me.address), Array(20).fill('served'), 'the ledger: 20 deferred calls served')

    await new DeferredCollector(deps, {
      escrow: devnet.deferredEscrowAddress,
      log: { info() {}, warn() {}, error() {} },
    }).runOnce({ force: true })
    t.same(await statusesOf(me.address), Array(20).fill('settled'), 'collected')
    t.equal((await usdcBalance(seller)) - sellerBefore, 20n * PRICE, 'the seller got exactly 20 x price')
    t.equal(await escrowBalance(me.address), 50_000n - 20n * PRICE)

    // after the collection the balance still covers the next call: no new deposit, the same voucher id goes on
    const next = await pay(url)
    t.equal(next.status, 200)
    t.match(next.payment, { voucher: { id: [...ids][0], nonce: '20', valueAggregate: String(21n * PRICE) } })
    t.equal(next.payment!.deposit, undefined)
  },
)

t.test('a short balance refused: the same call is sent once more with a deposit (and a permit)', async (t) => {
  const me = await newKey(10n ** 6n)
  const funder = await deferredBuyer(devnet, 10n ** 6n)
  await funder.depositFor(me.address, seller, 2n * PRICE)
  const pay = wrapFetch(fetch, { privateKey: me.key, deferred: { depositAmount: 10_000n } })
  for (let i = 0; i < 2; i++) t.equal((await pay(url)).payment!.deposit, undefined, `call ${i}: the balance covers it`)
  const third = await pay(url)
  t.equal(third.status, 200)
  t.match(third.payment, { deposit: '10000', voucher: { nonce: '2', valueAggregate: String(3n * PRICE) } })
  t.equal(await escrowBalance(me.address), 12_000n)
  t.same(await statusesOf(me.address), ['served', 'served', 'served'], 'the refused attempt charged nothing')

  const never = wrapFetch(fetch, { privateKey: me.key, deferred: { noDeposit: true } })
  const funded = await newKey(10n ** 6n)
  const refused = await wrapFetch(fetch, { privateKey: funded.key, deferred: { noDeposit: true } })(url).catch((e) => e)
  t.match(
    refused,
    { code: 'payment_rejected', details: { reason: 'invalid_deferred_evm_insufficient_escrow_balance' } },
    'noDeposit: a short balance is a refusal',
  )
  t.equal((await never(url)).status, 200, 'noDeposit with a balance pays')
})

t.test('concurrent calls to one seller aggregate one after another; deferred off pays exact', async (t) => {
  const me = await newKey(10n ** 6n)
  const pay = wrapFetch(fetch, { privateKey: me.key, deferred: true })
  const answers = await Promise.all(Array.from({ length: 5 }, () => pay(url)))
  t.same(
    answers.map((r) => r.status),
    [200, 200, 200, 200, 200],
  )
  t.same(answers.map((r) => r.payment!.voucher!.nonce).sort(), ['0', '1', '2', '3', '4'])
  t.equal(answers.filter((r) => r.payment!.deposit !== undefined).length, 1, 'one deposit (the default, 100 x price)')
  t.equal(await escrowBalance(me.address), 100n * PRICE)

  const plain = await wrapFetch(fetch, { privateKey: me.key })(url)
  t.match(
    plain.payment,
    { scheme: 'exact', header: 'PAYMENT-SIGNATURE' },
    'exact, in v2: the proxy declares payment-identifier',
  )
})

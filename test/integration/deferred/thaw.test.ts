/**
 * Collection before a thaw completes: the collect job watches the escrow accounts of buyers with
 * calls not yet collected and collects their seller as soon as one of them thaws, far below the
 * threshold and the age, so that after the buyer's withdrawal the seller was already paid.
 */
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { createPublicClient, createTestClient, getAddress, http, type Address } from 'viem'
import { DEVNET_ESCROW_THAWING_PERIOD } from '../../../src/chain/devnet.js'
import { usdcAbi } from '../../../src/chain/usdc-abi.js'
import { deferredEscrowAbi } from '../../../src/schemes/deferred/escrow-abi.js'
import { DeferredCollector } from '../../../src/services/deferred-collect/collector.js'
import { announceRegistryChange } from '../../../src/services/registry-events.js'
import { startWorkers } from '../../../workers/index.js'
import { deferredBuyer, payDeferredCalls } from '../../helpers/deferred-buyer.js'
import { decodeRequired } from '../../helpers/pay.js'
import { startTestPlatform } from '../../helpers/platform.js'
import { until } from '../../helpers/until.js'

const fixtures = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../fixtures/handlers')
const ECHO = '/tollgate/toolbox/echo?msg=thaw'
const PRICE = 1000n

// neither the threshold nor the age would collect during the test: only the thaw can
const platform = await startTestPlatform(t, {
  proxy: { handlersDir: fixtures },
  env: { DEFERRED_COLLECT_THRESHOLD: String(10n ** 12n), DEFERRED_COLLECT_MAX_AGE_SECONDS: '86400' },
})
const { deps, proxy, devnet } = platform
const seller = getAddress(devnet.accounts.receiver.address)
const pub = createPublicClient({ chain: devnet.chain, transport: http(devnet.rpcUrl) })
const testClient = createTestClient({ chain: devnet.chain, mode: 'anvil', transport: http(devnet.rpcUrl) })
const usdcBalance = (who: Address) =>
  pub.readContract({ address: devnet.usdcAddress, abi: usdcAbi, functionName: 'balanceOf', args: [who] })
const account = (buyer: Address) =>
  pub.readContract({
    address: devnet.deferredEscrowAddress,
    abi: deferredEscrowAbi,
    functionName: 'getAccount',
    args: [buyer, seller, devnet.usdcAddress],
  })
const quiet = { info() {}, warn() {}, error() {} }

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

const statusesOf = async (buyer: Address) =>
  (
    await deps.db
      .selectFrom('payments')
      .select('status')
      .where('payer', '=', buyer.toLowerCase())
      .orderBy('valid_after')
      .execute()
  ).map((r) => r.status)

t.test(
  'a buyer that thaws gets its seller collected at once; after the withdrawal the seller was already paid',
  async (t) => {
    const buyer = await deferredBuyer(devnet, 10n ** 6n)
    const calm = await deferredBuyer(devnet, 10n ** 6n)
    await buyer.deposit(seller, 10_000n)
    await calm.deposit(seller, 10_000n)
    await payDeferredCalls(proxy, buyer, ECHO, 3)
    await payDeferredCalls(proxy, calm, ECHO, 2)

    // nobody thaws: a run collects nothing (below the threshold, younger than the age)
    const idle = await new DeferredCollector(deps, { escrow: devnet.deferredEscrowAddress, log: quiet }).runOnce()
    t.equal(idle.transactions, 0, 'no collection without a thaw')
    t.same(await statusesOf(buyer.address), ['served', 'served', 'served'])

    // the buyer thaws everything; the job collects before the thawing period can end
    const sellerBefore = await usdcBalance(seller)
    const buyerBefore = await usdcBalance(buyer.address)
    await buyer.send('thaw', [seller, devnet.usdcAddress, 10_000n])
    const thawEnd = (await account(buyer.address)).thawEndTime
    const workers = await startWorkers(deps, { everyMs: { 'deferred-collect': 200 }, log: quiet })
    t.teardown(() => workers.close())
    await until('the thawing buyer collected', async () =>
      (await statusesOf(buyer.address)).every((s) => s === 'settled'),
    )
    await workers.close()
    const block = await pub.getBlock()
    t.ok(block.timestamp < thawEnd, `collected at ${block.timestamp}, before the thaw end ${thawEnd}`)
    t.equal(
      (await usdcBalance(seller)) - sellerBefore,
      5n * PRICE,
      'the seller paid for the thawing buyer, and the other buyer of the same seller with it',
    )
    t.same(await statusesOf(calm.address), ['settled', 'settled'])

    // the thaw ends and the buyer withdraws what is left: the seller keeps what it was paid
    await testClient.increaseTime({ seconds: Number(DEVNET_ESCROW_THAWING_PERIOD) + 1 })
    await testClient.mine({ blocks: 1 })
    await buyer.send('withdraw', [seller, devnet.usdcAddress])
    t.equal(
      (await usdcBalance(buyer.address)) - buyerBefore,
      10_000n - 3n * PRICE,
      'the buyer withdrew the deposit less its 3 calls',
    )
    t.equal((await account(buyer.address)).balance, 0n)
    t.equal((await usdcBalance(seller)) - sellerBefore, 5n * PRICE, 'nothing taken back from the seller')
  },
)

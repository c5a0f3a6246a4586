/**
 * Issue #33 §3, a voucher buyer that thaws and withdraws: deposit, call, `thaw` the whole balance,
 * call on, `withdraw` after the thawing period (anvil time travel), call on. A voucher is accepted
 * only against what the buyer cannot take back (balance less thawing, less what is outstanding);
 * the thaw, seen from the escrow's events, gets the seller collected at once (the collect job's own
 * runs are an hour apart here); every served call ends collected, and one that could not be (the
 * collector was down for the whole thaw) ends `failed: uncollectable`, shown to the seller, with
 * the buyer blocked.
 */
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { createPublicClient, createTestClient, getAddress, http, type Address } from 'viem'
import { DEVNET_ESCROW_THAWING_PERIOD } from '../../../src/chain/devnet.js'
import { usdcAbi } from '../../../src/chain/usdc-abi.js'
import type { DeferredVoucher } from '../../../src/schemes/deferred/typed-data.js'
import { DeferredCollector } from '../../../src/services/deferred-collect/collector.js'
import { announceRegistryChange } from '../../../src/services/registry-events.js'
import { startWorkers } from '../../../workers/index.js'
import { userWithKey } from '../../helpers/accounts.js'
import { deferredBuyer, deferredHeader, voucherWire, type DeferredBuyer } from '../../helpers/deferred-buyer.js'
import { decodeRequired } from '../../helpers/pay.js'
import { startTestPlatform } from '../../helpers/platform.js'
import { until } from '../../helpers/until.js'

const fixtures = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../fixtures/handlers')
const ECHO = '/tollgate/toolbox/echo?msg=thaw-withdraw'
const PRICE = 1000n
const HOUR_MS = 3_600_000

// neither the threshold, nor the age, nor the job's hourly run collects during the test: only a thaw
const platform = await startTestPlatform(t, {
  proxy: { handlersDir: fixtures },
  env: {
    DEFERRED_COLLECT_THRESHOLD: String(10n ** 12n),
    DEFERRED_COLLECT_MAX_AGE_SECONDS: '86400',
    DEFERRED_COLLECT_EVERY_MS: String(HOUR_MS),
    DEFERRED_WATCH_EVERY_MS: '200',
  },
})
const { deps, proxy, devnet } = platform
const seller = getAddress(devnet.accounts.receiver.address)
const pub = createPublicClient({ chain: devnet.chain, transport: http(devnet.rpcUrl) })
const testClient = createTestClient({ chain: devnet.chain, mode: 'anvil', transport: http(devnet.rpcUrl) })
const usdcBalance = (who: Address) =>
  pub.readContract({ address: devnet.usdcAddress, abi: usdcAbi, functionName: 'balanceOf', args: [who] })
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

/** One call paid with the voucher after `last` (the latest accepted); its status, reason and voucher. */
async function call(buyer: DeferredBuyer, last: DeferredVoucher | undefined) {
  const headers = { 'payer-identifier': buyer.address }
  const required = decodeRequired((await proxy.inject({ url: ECHO, headers })).headers['payment-required'] as string)
  const deferred = required.accepts.find((a) => a.scheme === 'deferred')!
  const v = buyer.voucher(deferred, last)
  const signature = await buyer.sign(v)
  const r = await proxy.inject({
    url: ECHO,
    headers: {
      ...headers,
      'payment-signature': deferredHeader(required, deferred, { voucher: voucherWire(v), signature }),
    },
  })
  const reason = r.statusCode === 402 ? decodeRequired(r.headers['payment-required'] as string).error : undefined
  return { status: r.statusCode, reason, voucher: v }
}

/** `n` calls, each aggregating onto the last accepted voucher; how many were served, and the last voucher. */
async function callOn(buyer: DeferredBuyer, last: DeferredVoucher | undefined, n: number) {
  let served = 0
  const reasons: string[] = []
  for (let i = 0; i < n; i++) {
    const r = await call(buyer, last)
    if (r.status === 200) {
      served++
      last = r.voucher
    } else reasons.push(r.reason ?? String(r.status))
  }
  return { served, last, reasons }
}

const statusCount = async (buyer: Address) => {
  const rows = await deps.db
    .selectFrom('payments')
    .select(['status', 'failure_reason'])
    .where('payer', '=', buyer.toLowerCase())
    .execute()
  const count: Record<string, number> = {}
  for (const r of rows) {
    const k = r.failure_reason ? `${r.status}:${r.failure_reason}` : r.status
    count[k] = (count[k] ?? 0) + 1
  }
  return count
}

const timeTravelPastThaw = async () => {
  await testClient.increaseTime({ seconds: Number(DEVNET_ESCROW_THAWING_PERIOD) + 1 })
  await testClient.mine({ blocks: 1 })
}

t.test('thaw, call on, withdraw, call on: every served call collected, none left served', async (t) => {
  const workers = await startWorkers(deps, { everyMs: { 'deferred-collect': HOUR_MS }, log: quiet })
  t.teardown(() => workers.close())
  const buyer = await deferredBuyer(devnet, 10n ** 6n)
  const deposit = 10n * PRICE
  await buyer.deposit(seller, deposit)
  const sellerBefore = await usdcBalance(seller)
  const buyerBefore = await usdcBalance(buyer.address)

  const before = await callOn(buyer, undefined, 3)
  t.equal(before.served, 3, 'served before the thaw')

  await buyer.send('thaw', [seller, devnet.usdcAddress, deposit])
  // call on at once: a call may land before the proxy saw the thaw (it is then within the balance,
  // collected during the thaw); none beyond what stays once it has seen it
  const during = await callOn(buyer, before.last, 6)
  await until('the thaw collected from its event (the job runs hourly)', async () => {
    const c = await statusCount(buyer.address)
    return (c.settled ?? 0) === 3 + during.served
  })
  const after = await callOn(buyer, during.last, 3)
  t.equal(after.served, 0, 'nothing served while the whole balance thaws')
  t.ok(
    after.reasons.every((r) => r === 'invalid_deferred_evm_insufficient_escrow_balance'),
    `refused: ${after.reasons.join(', ')}`,
  )

  await timeTravelPastThaw()
  await buyer.send('withdraw', [seller, devnet.usdcAddress])
  const withdrawn = (await usdcBalance(buyer.address)) - buyerBefore
  const late = await callOn(buyer, during.last, 4)
  t.equal(late.served, 0, 'nothing served after the withdrawal')

  // one more decision round: nothing may be left served
  await new DeferredCollector(deps, { escrow: devnet.deferredEscrowAddress, log: quiet }).runOnce({ force: true })
  const served = 3 + during.served
  const c = await statusCount(buyer.address)
  t.same(c, { settled: served }, `every one of the ${served} served calls collected, none uncollectable or served`)
  t.equal((await usdcBalance(seller)) - sellerBefore, BigInt(served) * PRICE, 'the seller was paid every served call')
  t.equal(withdrawn, deposit - BigInt(served) * PRICE, 'the buyer withdrew only what no call used')
  t.comment(`figures: ${served} served (${during.served} right after the thaw), ${served} collected, 0 unpaid`)
  await workers.close()
})

t.test(
  'a served call the escrow can no longer pay: failed uncollectable, shown to the seller, buyer blocked',
  async (t) => {
    // the seller of the toolbox, as a user that reads its history
    const owner = await userWithKey(deps)
    await deps.db
      .updateTable('sellers')
      .set({ owner_user_id: owner.userId })
      .where('id', '=', (eb) =>
        eb
          .selectFrom('endpoints')
          .innerJoin('services', 'services.id', 'endpoints.service_id')
          .select('services.seller_id')
          .where('endpoints.slug', '=', 'echo')
          .limit(1),
      )
      .execute()
    const buyer = await deferredBuyer(devnet, 10n ** 6n)
    await buyer.deposit(seller, 2n * PRICE)
    const served = await callOn(buyer, undefined, 2)
    t.equal(served.served, 2)
    // no collector runs (a worker down for the whole thawing period): the thaw ends, the buyer withdraws
    await buyer.send('thaw', [seller, devnet.usdcAddress, 2n * PRICE])
    const refused = await call(buyer, served.last)
    t.equal(refused.reason, 'invalid_deferred_evm_insufficient_escrow_balance', 'nothing more while thawing')
    await timeTravelPastThaw()
    await buyer.send('withdraw', [seller, devnet.usdcAddress])

    const stats = await new DeferredCollector(deps, { escrow: devnet.deferredEscrowAddress, log: quiet }).runOnce({
      force: true,
    })
    t.equal(stats.uncollectable, 2, 'both decided uncollectable')
    t.same(await statusCount(buyer.address), { 'failed:uncollectable': 2 }, 'none left served')
    const block = await deps.db
      .selectFrom('payer_blocks')
      .selectAll()
      .where('payer', '=', buyer.address.toLowerCase())
      .executeTakeFirst()
    t.equal(block?.reason, 'uncollectable', 'the buyer is blocked')

    // the seller sees them: its transactions and the payment events
    const txs = (await deps.services.history.page(
      'transactions',
      owner.userId,
      { role: 'seller' },
      100,
    )) as unknown as {
      data: Array<{ payer: string; status: string; failure_reason: string | null }>
    }
    const mine = txs.data.filter((r) => r.payer === buyer.address.toLowerCase())
    t.same(
      mine.map((r) => `${r.status}:${r.failure_reason}`),
      ['failed:uncollectable', 'failed:uncollectable'],
      'in the seller transactions',
    )
    const events = (await deps.services.history.page(
      'payment_events',
      owner.userId,
      { role: 'seller' },
      100,
    )) as unknown as {
      data: Array<{ to_status: string; reason: string | null }>
    }
    t.equal(
      events.data.filter((e) => e.to_status === 'failed' && e.reason === 'uncollectable').length,
      2,
      'in the seller payment events',
    )

    // deposits again: vouchers stay refused while blocked (exact, settled first, lifts the block)
    await buyer.deposit(seller, 5n * PRICE)
    const again = await call(buyer, served.last)
    t.equal(again.status, 402)
    t.equal(again.reason, 'payer_blocked', 'a blocked buyer pays no more vouchers')
  },
)

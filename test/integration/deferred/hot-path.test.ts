/**
 * The deferred hot path's Redis reservation against Postgres, through the proxy: Redis losing a
 * buyer's heads (rebuilt from Postgres), Redis behind Postgres (a second voucher with a stored nonce
 * is refused by Postgres even when Redis would take it), a reservation a dead process never wrote
 * (reloaded once it is old), and a collection moving the cached `collected`.
 */
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { getAddress, type Address, type Hex } from 'viem'
import { redisTag } from '../../../src/redis-client.js'
import { announceRegistryChange } from '../../../src/services/registry-events.js'
import { DeferredCollector } from '../../../src/services/deferred-collect/collector.js'
import { createVoucherHeads, STALE_RESERVATION_MS } from '../../../src/schemes/deferred/voucher-heads.js'
import type { DeferredVoucher } from '../../../src/schemes/deferred/typed-data.js'
import { deferredBuyer, deferredHeader, voucherWire } from '../../helpers/deferred-buyer.js'
import { decodeRequired } from '../../helpers/pay.js'
import { startTestPlatform } from '../../helpers/platform.js'
import { until } from '../../helpers/until.js'

const fixtures = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../fixtures/handlers')
const ECHO = '/tollgate/toolbox/echo?msg=hi'
const PRICE = 1000n

const platform = await startTestPlatform(t, {
  proxy: { handlersDir: fixtures },
  env: { DEFERRED_COLLECT_THRESHOLD: String(10n ** 12n), DEFERRED_COLLECT_MAX_AGE_SECONDS: '86400' },
})
const { deps, proxy, devnet } = platform
const seller = getAddress(devnet.accounts.receiver.address)
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
const heads = createVoucherHeads(deps)

const challenge = async (buyer: Address) => {
  const r = await proxy.inject({ url: ECHO, headers: { 'payer-identifier': buyer } })
  const required = decodeRequired(r.headers['payment-required'] as string)
  return { required, deferred: required.accepts.find((a) => a.scheme === 'deferred')! }
}
const pay = async (buyer: Address, v: DeferredVoucher, signature: string) => {
  const { required, deferred } = await challenge(buyer)
  return proxy.inject({
    url: ECHO,
    headers: {
      'payer-identifier': buyer,
      'payment-signature': deferredHeader(required, deferred, { voucher: voucherWire(v), signature }),
    },
  })
}
const reasonOf = (r: { headers: Record<string, unknown> }) =>
  decodeRequired(r.headers['payment-required'] as string).error
const tupleOf = (buyer: Address) => ({
  escrow: devnet.deferredEscrowAddress.toLowerCase() as Address,
  buyer: buyer.toLowerCase() as Address,
  seller: seller.toLowerCase() as Address,
  asset: devnet.usdcAddress.toLowerCase() as Address,
})
const hashKey = (buyer: Address) => {
  const t = tupleOf(buyer)
  return deps.key('dv', redisTag(t.buyer), t.escrow, t.seller, t.asset)
}
/** the stored nonces, the head (highest nonce of its voucher id) starred */
const stored = async (buyer: Address) => {
  const rows = await deps.db
    .selectFrom('deferred_vouchers')
    .select(['nonce', 'voucher_id'])
    .where('buyer', '=', buyer.toLowerCase())
    .orderBy('nonce')
    .execute()
  const head = new Map(rows.map((r) => [r.voucher_id, r.nonce]))
  return rows.map((r) => `${r.nonce}${head.get(r.voucher_id) === r.nonce ? '*' : ''}`)
}
const paymentsOf = async (buyer: Address) =>
  Number(
    (
      await deps.db
        .selectFrom('payments')
        .select((eb) => eb.fn.countAll().as('n'))
        .where('payer', '=', buyer.toLowerCase())
        .where('status', '<>', 'voided')
        .executeTakeFirstOrThrow()
    ).n,
  )

async function funded() {
  const buyer = await deferredBuyer(devnet, 10n ** 6n)
  await buyer.deposit(seller, 100_000n)
  const { deferred } = await challenge(buyer.address)
  return { buyer, deferred }
}

t.test(
  'Redis loses the heads: rebuilt from Postgres; the old nonce stays refused, the next one is accepted',
  async (t) => {
    const { buyer, deferred } = await funded()
    const v0 = buyer.voucher(deferred)
    const s0 = await buyer.sign(v0)
    t.equal((await pay(buyer.address, v0, s0)).statusCode, 200)
    const v1 = buyer.voucher(deferred, v0)
    t.equal((await pay(buyer.address, v1, await buyer.sign(v1))).statusCode, 200)
    t.equal(await deps.redis.exists(hashKey(buyer.address)), 1, 'the heads are cached')
    await deps.redis.del(hashKey(buyer.address))
    const replay = await pay(buyer.address, v1, await buyer.sign(v1))
    t.equal(reasonOf(replay), 'invalid_deferred_evm_payload_voucher_stale', 'nonce 1 again: refused')
    const other1 = buyer.voucher(deferred, v0)
    t.equal(
      reasonOf(await pay(buyer.address, other1, await buyer.sign(other1))),
      'invalid_deferred_evm_payload_voucher_stale',
      'another voucher with nonce 1: refused',
    )
    const v2 = buyer.voucher(deferred, v1)
    t.equal((await pay(buyer.address, v2, await buyer.sign(v2))).statusCode, 200, 'nonce 2 continues the stored head')
    t.same(await stored(buyer.address), ['0', '1', '2*'])
    t.equal(await paymentsOf(buyer.address), 3)
  },
)

t.test('Redis behind Postgres would take a stored nonce again: Postgres refuses it, nothing charged', async (t) => {
  const { buyer, deferred } = await funded()
  const v0 = buyer.voucher(deferred)
  t.equal((await pay(buyer.address, v0, await buyer.sign(v0))).statusCode, 200)
  const head0 = await deps.redis.hget(hashKey(buyer.address), `i:${v0.id}`)
  const v1 = buyer.voucher(deferred, v0)
  t.equal((await pay(buyer.address, v1, await buyer.sign(v1))).statusCode, 200)
  // Redis set back to the head before nonce 1 (as a cache restored from an old snapshot would be)
  await deps.redis.hset(hashKey(buyer.address), `i:${v0.id}`, head0!)
  const again = buyer.voucher(deferred, v0) // nonce 1, another timestamp: another digest
  const r = await pay(buyer.address, again, await buyer.sign(again))
  t.equal(r.statusCode, 402, 'the store refuses the second nonce 1')
  t.equal(reasonOf(r), 'invalid_deferred_evm_payload_voucher_stale')
  t.same(await stored(buyer.address), ['0', '1*'], 'one voucher per nonce')
  t.equal(await paymentsOf(buyer.address), 2, 'the refused call charged nothing')
  // the buyer goes on from the stored head
  const v2 = buyer.voucher(deferred, v1)
  t.equal((await pay(buyer.address, v2, await buyer.sign(v2))).statusCode, 200, 'nonce 2 after the reload')
  t.same(await stored(buyer.address), ['0', '1', '2*'])
})

t.test('a reservation its process never wrote (it died) is reloaded once it is old', async (t) => {
  const { buyer, deferred } = await funded()
  const v0 = buyer.voucher(deferred)
  t.equal((await pay(buyer.address, v0, await buyer.sign(v0))).statusCode, 200)
  const v1 = buyer.voucher(deferred, v0)
  const s1 = await buyer.sign(v1)
  // a process reserved nonce 1 and died before the write; first while it may still be running
  const lower = (a: Address) => a.toLowerCase() as Address
  const wire = {
    ...v1,
    buyer: lower(v1.buyer),
    seller: lower(v1.seller),
    asset: lower(v1.asset),
    escrow: lower(v1.escrow),
  }
  const lost = {
    voucher: wire,
    digest: `0x${'11'.repeat(32)}` as Hex,
    amount: PRICE,
    available: 100_000n,
    availableAtMs: Date.now(),
  }
  t.ok((await heads.reserve({ ...lost, nowMs: Date.now() })).ok)
  t.equal(reasonOf(await pay(buyer.address, v1, s1)), 'invalid_deferred_evm_payload_voucher_stale', 'still running?')
  // the same reservation, made long ago
  await deps.redis.del(hashKey(buyer.address))
  t.ok((await heads.reserve({ ...lost, nowMs: Date.now() - STALE_RESERVATION_MS - 1000 })).ok)
  t.equal((await pay(buyer.address, v1, s1)).statusCode, 200, 'the old reservation gave way to Postgres')
  t.same(await stored(buyer.address), ['0', '1*'])
})

t.test('two vouchers with the same nonce at once, Redis cold: exactly one wins', async (t) => {
  const { buyer, deferred } = await funded()
  const v0 = buyer.voucher(deferred)
  t.equal((await pay(buyer.address, v0, await buyer.sign(v0))).statusCode, 200)
  await deps.redis.del(hashKey(buyer.address))
  const tries = [buyer.voucher(deferred, v0), buyer.voucher(deferred, v0), buyer.voucher(deferred, v0)]
  const answers = await Promise.all(tries.map(async (v) => pay(buyer.address, v, await buyer.sign(v))))
  t.same(answers.map((a) => a.statusCode).sort(), [200, 402, 402])
  t.same(await stored(buyer.address), ['0', '1*'])
})

t.test('a collection moves the cached collected: the buyer spends what it deposits again', async (t) => {
  const buyer = await deferredBuyer(devnet, 10n ** 6n)
  await buyer.deposit(seller, 3n * PRICE)
  const { deferred } = await challenge(buyer.address)
  let v = buyer.voucher(deferred)
  t.equal((await pay(buyer.address, v, await buyer.sign(v))).statusCode, 200)
  for (let i = 0; i < 2; i++) {
    v = buyer.voucher(deferred, v)
    t.equal((await pay(buyer.address, v, await buyer.sign(v))).statusCode, 200)
  }
  const over = buyer.voucher(deferred, v)
  t.equal(
    reasonOf(await pay(buyer.address, over, await buyer.sign(over))),
    'invalid_deferred_evm_insufficient_escrow_balance',
  )
  await new DeferredCollector(deps, {
    escrow: devnet.deferredEscrowAddress,
    log: { info() {}, warn() {}, error() {} },
  }).runOnce({ force: true })
  const head = await deps.redis.hget(hashKey(buyer.address), `i:${v.id}`)
  t.match(head, new RegExp(`^2:${3n * PRICE}:\\d+:${3n * PRICE}:`), 'the cached head knows it was collected')
  await buyer.deposit(seller, PRICE)
  const next = buyer.voucher(deferred, v)
  t.equal((await pay(buyer.address, next, await buyer.sign(next))).statusCode, 200, 'paid from the new deposit')
})

import { randomBytes } from 'node:crypto'
import t from 'tap'
import { payerCredit } from '../../src/services/payer-credit.js'
import { testDeps } from '../helpers/test-env.js'

const hex = (n: number) => `0x${randomBytes(n).toString('hex')}`

// Calls made in the same turn share one script run: each payment must see the ones before it in
// the batch exactly as separate calls would.
t.test('a batch of reservations behaves like the same calls one by one', async (t) => {
  const deps = await testDeps(t)
  const credit = payerCredit(deps)
  const asset = hex(20)
  const [rich, poor, blocked, unknown] = [hex(20), hex(20), hex(20), hex(20)]
  await credit.setBalance(asset, rich, 10_000n)
  await credit.setBalance(asset, poor, 2_500n)
  await credit.setBalance(asset, blocked, 10_000n)
  await credit.block(blocked, 'test')
  const nowMs = Date.now()
  const args = (payer: string, nonce: string, value: bigint) => ({ payer, asset, nonce, value, validBefore: Math.floor(nowMs / 1000) + 60, nowMs })

  const shared = hex(32)
  const results = await Promise.all([
    credit.reserve(args(poor, hex(32), 1_000n)),
    credit.reserve(args(poor, hex(32), 1_000n)),
    credit.reserve(args(poor, hex(32), 1_000n)), // 3,000 > 2,500: refused, nothing reserved
    credit.reserve(args(poor, hex(32), 500n)), // still fits after the refusal
    credit.reserve(args(rich, shared, 1_000n)),
    credit.reserve(args(rich, shared, 1_000n)), // same nonce in the same batch
    credit.reserve(args(blocked, hex(32), 1n)),
    credit.reserve(args(unknown, hex(32), 1n)),
    credit.reserve(args(rich, hex(32), 2n ** 60n)), // beyond what Redis tracks exactly
  ])
  t.same(results.map((r) => r.result), ['ok', 'ok', 'insufficient', 'ok', 'ok', 'nonce_used', 'blocked', 'unknown_balance', 'insufficient'])
  t.same(results.slice(0, 2).map((r) => r.stale), [false, false], 'a balance just set is fresh')

  const exposure = async (payer: string) => deps.redis.get(credit.keys.exposure(asset, payer))
  t.equal(await exposure(poor), '2500', 'exposure counts only the accepted payments, in order')
  t.equal(await exposure(rich), '1000')
  const ttl = await deps.redis.pttl(credit.keys.nonce(rich, shared))
  t.ok(ttl > 60_000 && ttl <= 121_000, `the nonce lives until validBefore plus a minute (${ttl} ms)`)

  // a stale balance (its freshness marker expired) asks for a background refresh
  await deps.redis.del(credit.keys.fresh(asset, rich))
  const stale = await credit.reserve(args(rich, hex(32), 1n))
  t.same(stale, { result: 'ok', stale: true })

  // larger than one script call: split into several, still all counted
  const many = await Promise.all(Array.from({ length: 300 }, () => credit.reserve(args(rich, hex(32), 1n))))
  t.equal(many.filter((r) => r.result === 'ok').length, 300)
  t.equal(await exposure(rich), String(1000 + 1 + 300))
})

t.test('Redis unavailable: every caller of the batch gets the error', async (t) => {
  const deps = await testDeps(t)
  const credit = payerCredit(deps)
  const asset = hex(20)
  await deps.redis.quit()
  const nowMs = Date.now()
  const calls = Array.from({ length: 3 }, () => credit.reserve({ payer: hex(20), asset, nonce: hex(32), value: 1n, validBefore: Math.floor(nowMs / 1000) + 60, nowMs }))
  for (const r of await Promise.allSettled(calls)) t.equal(r.status, 'rejected')
})

t.test('a settled payment leaves exposure and cached balance in one step', async (t) => {
  const deps = await testDeps(t)
  const credit = payerCredit(deps)
  const asset = hex(20)
  const payer = hex(20)
  const nowMs = Date.now()
  await credit.setBalance(asset, payer, 5_000n)
  t.equal((await credit.reserve({ payer, asset, nonce: hex(32), value: 3_000n, validBefore: Math.floor(nowMs / 1000) + 60, nowMs })).result, 'ok')
  const read = async (key: string) => deps.redis.get(key)
  await credit.settled({ payer, asset, value: 3_000n })
  t.equal(await read(credit.keys.exposure(asset, payer)), '0', 'no longer unsettled')
  t.equal(await read(credit.keys.balance(asset, payer)), '2000', 'and no longer in the wallet: without this, a failed balance re-read left 5,000 of credit')
  t.equal(await read(credit.keys.fresh(asset, payer)), null, 'the balance is due for a refresh')
  t.ok((await deps.redis.ttl(credit.keys.balance(asset, payer))) > 0, 'the cached balance keeps its expiry')
  t.equal((await credit.reserve({ payer, asset, nonce: hex(32), value: 3_000n, validBefore: Math.floor(nowMs / 1000) + 60, nowMs })).result, 'insufficient', 'so the same payer cannot spend the 3,000 twice')

  await credit.settled({ payer, asset, value: 9_000n })
  t.equal(await read(credit.keys.balance(asset, payer)), '0', 'never below zero')
  const cold = hex(20)
  await credit.settled({ payer: cold, asset, value: 1n })
  t.equal(await read(credit.keys.balance(asset, cold)), null, 'a payer not cached stays uncached (read from the chain at its next payment)')
  t.equal(await read(credit.keys.exposure(asset, cold)), null)
})

import { randomBytes, randomUUID } from 'node:crypto'
import { sql } from 'kysely'
import t from 'tap'
import type { Deps } from '../../../src/deps.js'
import { createPayerCredit } from '../../../src/ledger/payer-credit.js'
import { testDeps } from '../../helpers/test-env.js'

const hex = (n: number) => `0x${randomBytes(n).toString('hex')}`

// Calls made in the same turn share one script run: each payment must see the ones before it in
// the batch exactly as separate calls would.
t.test('a batch of reservations behaves like the same calls one by one', async (t) => {
  const deps = await testDeps(t)
  const credit = createPayerCredit(deps)
  const asset = hex(20)
  const [rich, poor, blocked, unknown] = [hex(20), hex(20), hex(20), hex(20)]
  await credit.setBalance(asset, rich, 10_000n)
  await credit.setBalance(asset, poor, 2_500n)
  await credit.setBalance(asset, blocked, 10_000n)
  await credit.block(blocked, 'test')
  const nowMs = Date.now()
  const args = (payer: string, nonce: string, value: bigint) => ({
    payer,
    asset,
    nonce,
    value,
    validBefore: Math.floor(nowMs / 1000) + 60,
    nowMs,
  })

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
  t.same(
    results.map((r) => r.result),
    ['ok', 'ok', 'insufficient', 'ok', 'ok', 'nonce_used', 'blocked', 'unknown_balance', 'insufficient'],
  )
  t.same(
    results.slice(0, 2).map((r) => r.stale),
    [false, false],
    'a balance just set is fresh',
  )

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
  const credit = createPayerCredit(deps)
  const asset = hex(20)
  await deps.redis.quit()
  const nowMs = Date.now()
  const calls = Array.from({ length: 3 }, () =>
    credit.reserve({
      payer: hex(20),
      asset,
      nonce: hex(32),
      value: 1n,
      validBefore: Math.floor(nowMs / 1000) + 60,
      nowMs,
    }),
  )
  for (const r of await Promise.allSettled(calls)) t.equal(r.status, 'rejected')
})

/** A new payer whose on-chain balance is cached; `reserve` reserves a payment of it with a new nonce. */
async function cachedPayer(t: Parameters<typeof testDeps>[0], balance: bigint) {
  const deps = await testDeps(t)
  const credit = createPayerCredit(deps)
  const asset = hex(20)
  const payer = hex(20)
  const nowMs = Date.now()
  await credit.setBalance(asset, payer, balance)
  const reserve = (value: bigint) =>
    credit.reserve({ payer, asset, nonce: hex(32), value, validBefore: Math.floor(nowMs / 1000) + 60, nowMs })
  return { deps, credit, asset, payer, reserve }
}

t.test('a settled payment leaves exposure and cached balance in one step', async (t) => {
  const { deps, credit, asset, payer, reserve } = await cachedPayer(t, 5_000n)
  t.equal((await reserve(3_000n)).result, 'ok')
  const read = async (key: string) => deps.redis.get(key)
  await credit.settled({ payer, asset, value: 3_000n })
  t.equal(await read(credit.keys.exposure(asset, payer)), '0', 'no longer unsettled')
  t.equal(
    await read(credit.keys.balance(asset, payer)),
    '2000',
    'and no longer in the wallet: without this, a failed balance re-read left 5,000 of credit',
  )
  t.equal(await read(credit.keys.fresh(asset, payer)), null, 'the balance is due for a refresh')
  t.ok((await deps.redis.ttl(credit.keys.balance(asset, payer))) > 0, 'the cached balance keeps its expiry')
  t.equal((await reserve(3_000n)).result, 'insufficient', 'so the same payer cannot spend the 3,000 twice')

  await credit.settled({ payer, asset, value: 9_000n })
  t.equal(await read(credit.keys.balance(asset, payer)), '0', 'never below zero')
  const cold = hex(20)
  await credit.settled({ payer: cold, asset, value: 1n })
  t.equal(
    await read(credit.keys.balance(asset, cold)),
    null,
    'a payer not cached stays uncached (read from the chain at its next payment)',
  )
  t.equal(await read(credit.keys.exposure(asset, cold)), null)
})

/** an open payment of `payer` as the proxy records it */
async function recordOpen(deps: Deps, payer: string, asset: string, value: bigint) {
  await deps.db
    .insertInto('payments')
    .values({
      id: randomUUID(),
      resource: 'https://proxy/x/y/z',
      method: 'GET',
      x402_version: 2,
      network: 'eip155:84532',
      asset,
      payer,
      pay_to: hex(20),
      value: value.toString(),
      valid_after: 0,
      valid_before: 2_000_000_000,
      nonce: hex(32),
      signature: '0xsig',
      status: 'served',
    })
    .execute()
}

async function until(what: string, check: () => Promise<boolean>) {
  for (let i = 0; i < 500; i++) {
    if (await check()) return
    await new Promise((r) => setTimeout(r, 10))
  }
  throw new Error(`timed out waiting for ${what}`)
}

// The rebuild reads Postgres, then stores the total. A payment reserved in between (its row not yet
// committed when Postgres was read) used to be overwritten out of the exposure: the payer got that
// much credit again.
t.test('a rebuild of exposure keeps the reservations made while it reads Postgres', async (t) => {
  const { deps, credit, asset, payer, reserve } = await cachedPayer(t, 10_000n)
  await recordOpen(deps, payer, asset, 700n)

  // hold Postgres so both rebuilds (the second one concurrent, as two workers would be) wait on
  // their read while a payment is reserved
  let unlock!: () => void
  const held = new Promise<void>((r) => (unlock = r))
  let locked!: () => void
  const lockTaken = new Promise<void>((r) => (locked = r))
  const holder = deps.db.transaction().execute(async (trx) => {
    await sql`lock table payments in access exclusive mode`.execute(trx)
    locked()
    await held
  })
  await lockTaken
  const first = credit.rebuildExposure(asset, payer)
  await until('the rebuild to start', async () => (await deps.redis.exists(credit.keys.rebuild(asset, payer))) === 1)
  const second = credit.rebuildExposure(asset, payer)
  const reserved = await reserve(300n)
  t.equal(reserved.result, 'ok')
  unlock()
  await holder
  // the second one only reads what is stored when it ends, possibly before the first has stored its total
  const [owner] = await Promise.all([first, second])
  t.equal(await deps.redis.get(credit.keys.exposure(asset, payer)), '1000', 'the recorded 700 and the in-flight 300')
  t.equal(owner, 1000n, 'the rebuild that counted returns what it stored')
  t.equal(await deps.redis.exists(credit.keys.rebuild(asset, payer)), 0, 'the rebuild leaves no count behind')

  // a later reservation counts once, outside any rebuild
  await reserve(5n)
  t.equal(await deps.redis.get(credit.keys.exposure(asset, payer)), '1005')

  // a cold cache (flushed Redis) is rebuilt from Postgres alone
  await deps.redis.del(credit.keys.exposure(asset, payer))
  t.equal(await credit.rebuildExposure(asset, payer), 700n)
})

// A balance read from the chain before one of the payer's payments settled, and stored after the
// settlement took that payment off the cached balance, used to put the spent amount back.
t.test('a balance read that overlaps a settlement is not stored over it', async (t) => {
  const { deps, credit, asset, payer, reserve } = await cachedPayer(t, 5_000n)
  t.equal((await reserve(3_000n)).result, 'ok')
  const read = await credit.readBalances(asset, [payer], async () => {
    // the chain answered 5,000 (the block before the transfer); the settlement lands meanwhile
    await credit.settled({ payer, asset, value: 3_000n })
    return [5_000n]
  })
  t.same(read, [5_000n])
  t.equal(await deps.redis.get(credit.keys.balance(asset, payer)), '2000', 'the settled-adjusted balance stays')
  t.equal(await deps.redis.get(credit.keys.fresh(asset, payer)), null, 'and is still due for a refresh')

  // with no settlement during the read, the balance read is stored and fresh
  await credit.readBalances(asset, [payer], async () => [2_000n])
  t.equal(await deps.redis.get(credit.keys.balance(asset, payer)), '2000')
  t.equal(await deps.redis.get(credit.keys.fresh(asset, payer)), '1')

  // first sight (cold cache): a settlement during the read makes warm() read again
  const cold = hex(20)
  let reads = 0
  await credit.warm(asset, cold, async () => {
    reads++
    if (reads === 1) await credit.settled({ payer: cold, asset, value: 1n })
    return [reads === 1 ? 900n : 899n]
  })
  t.equal(reads, 2, 'read twice')
  t.equal(await deps.redis.get(credit.keys.balance(asset, cold)), '899')
  t.equal(await deps.redis.get(credit.keys.exposure(asset, cold)), '0')
})

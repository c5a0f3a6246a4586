import { randomBytes } from 'node:crypto'
import { Worker } from 'bullmq'
import t from 'tap'
import { loadConfig } from '../../../src/config.js'
import { createPayerCredit } from '../../../src/ledger/payer-credit.js'
import { createFixedWindowLimiter } from '../../../src/limits/fixed-window.js'
import { bullConnection, queuePrefix, settlementQueue } from '../../../src/queue/settlement-queue.js'
import { keyServers, keySlot, parseRedisUrl, redisTag, whenReady } from '../../../src/redis-client.js'
import { createLoginDevices } from '../../../src/services/accounts/login-devices.js'
import { createSpendWindows, windowsAt } from '../../../src/services/agent-payments/spend-windows.js'
import { startRedisCluster } from '../../helpers/redis-cluster.js'
import { testDeps } from '../../helpers/test-env.js'
import { until } from '../../helpers/until.js'

const hex = (n: number) => `0x${randomBytes(n).toString('hex')}`

t.test('REDIS_URL forms: one server, or the nodes of a cluster', async (t) => {
  t.same(parseRedisUrl('redis://127.0.0.1:6379'), { kind: 'single', url: 'redis://127.0.0.1:6379' })
  t.same(parseRedisUrl('redis+cluster://u:p%40ss@10.0.0.1:7000,10.0.0.2:7001,[::1]:7002'), {
    kind: 'cluster',
    nodes: [
      { host: '10.0.0.1', port: 7000 },
      { host: '10.0.0.2', port: 7001 },
      { host: '::1', port: 7002 },
    ],
    username: 'u',
    password: 'p@ss',
    tls: false,
  })
  t.equal((parseRedisUrl('rediss+cluster://h:1') as { tls: boolean }).tls, true)
  t.throws(() => parseRedisUrl('redis+cluster://h1:7000,h2'), /cluster node "h2": expected host:port/)
  t.throws(() => parseRedisUrl('redis+cluster://h1:7000/0'), /no database/)
  t.throws(() => parseRedisUrl('memcached://h:1'), /expected redis:\/\//)
  t.equal(loadConfig({ REDIS_URL: 'redis+cluster://a:1,b:2' }).redisUrl, 'redis+cluster://a:1,b:2')
  const bad = (() => {
    try {
      loadConfig({ REDIS_URL: 'redis+cluster://:secret@a:1,b' })
      return ''
    } catch (err) {
      return (err as Error).message
    }
  })()
  t.match(bad, /REDIS_URL: cluster node "b": expected host:port/, 'a bad URL is named')
  t.notMatch(bad, /secret/, 'its password is not')
  t.throws(() => loadConfig({ REDIS_PREFIX: 'tg:{x}' }), /REDIS_PREFIX: must not contain \{ or \}/)
  t.equal(keySlot('foo'), 12182, 'the slot Redis computes (CLUSTER KEYSLOT foo)')
  t.equal(keySlot('a:{user1000}:b'), keySlot('user1000'), 'a hash tag decides the slot')
})

t.test('on a real Redis Cluster (3 masters, 3 replicas)', async (t) => {
  const cluster = await startRedisCluster(t)
  const deps = await testDeps(t, { REDIS_URL: cluster.url })
  await whenReady(deps.redis)
  const nowMs = Date.now()
  const validBefore = Math.floor(nowMs / 1000) + 60

  t.test('payment guard: batches of many payers split by slot, exact per payer, replays refused', async (t) => {
    const credit = createPayerCredit(deps)
    const asset = hex(20)
    const payers = Array.from({ length: 40 }, () => hex(20))
    const masters = new Set(await Promise.all(payers.map((p) => cluster.masterOf(redisTag(p)))))
    t.equal(masters.size, 3, 'the payers live on all three masters')
    for (const p of payers) await credit.setBalance(asset, p, 2_500n)
    const nonces = payers.map(() => hex(32))
    // per payer: three payments of 1,000 (the third does not fit) and a replay of the first nonce
    const calls = payers.flatMap((payer, i) => [
      { payer, nonce: nonces[i]!, value: 1_000n },
      { payer, nonce: hex(32), value: 1_000n },
      { payer, nonce: hex(32), value: 1_000n },
      { payer, nonce: nonces[i]!, value: 1n },
    ])
    const results = await Promise.all(
      calls.map((c) => credit.reserve({ ...c, asset, validBefore, nowMs }).then((r) => r.result)),
    )
    for (let i = 0; i < payers.length; i++)
      t.same(results.slice(i * 4, i * 4 + 4), ['ok', 'ok', 'insufficient', 'nonce_used'], `payer ${i}`)
    const exposures = await Promise.all(payers.map((p) => deps.redis.get(credit.keys.exposure(asset, p))))
    t.ok(
      exposures.every((e) => e === '2000'),
      'each payer exposed exactly 2,000',
    )
    // the other scripts, each on one payer's slot
    await credit.settled({ payer: payers[0]!, asset, value: 1_000n })
    await credit.release({ payer: payers[1]!, asset, value: 1_000n })
    t.equal(await deps.redis.get(credit.keys.balance(asset, payers[0]!)), '1500')
    t.equal(await deps.redis.get(credit.keys.exposure(asset, payers[1]!)), '1000')
    const read = await credit.readBalances(asset, payers.slice(0, 10), async (ps) => ps.map(() => 7_000n))
    t.same(read, Array(10).fill(7_000n))
    t.equal(await deps.redis.get(credit.keys.balance(asset, payers[5]!)), '7000', 'balances stored across slots')
    t.equal(await credit.rebuildExposure(asset, hex(20)), 0n, 'a rebuild (two keys, one slot) runs')
    await credit.block(payers[2]!, 'test')
    t.equal(await credit.isBlocked(payers[2]!), true)

    // scripts are loaded per node: with every node's script cache emptied, EVALSHA meets NOSCRIPT
    // on each master and ioredis sends the script again (EVAL)
    const masters3 = keyServers(deps.redis)
    t.equal(masters3.length, 3)
    const cached = async () =>
      Promise.all(masters3.map(async (m) => Number(/number_of_cached_scripts:(\d+)/.exec(await m.info('memory'))?.[1])))
    await Promise.all(masters3.map((m) => m.script('FLUSH')))
    t.same(await cached(), [0, 0, 0], 'no master has a script')
    const afterFlush = await Promise.all(
      payers.map((payer) => credit.reserve({ payer, asset, nonce: hex(32), value: 1n, validBefore, nowMs })),
    )
    t.ok(
      afterFlush.every((r, i) => r.result === (i === 2 ? 'blocked' : 'ok')),
      'the guard runs on every master after SCRIPT FLUSH',
    )
    t.ok(
      (await cached()).every((n) => n >= 1),
      'and each master has loaded it again',
    )
  })

  t.test('agent caps exact under concurrency', async (t) => {
    const windows = createSpendWindows(deps.redis, deps.key)
    const agentId = randomBytes(16).toString('hex')
    const wallet = hex(20)
    const w = windowsAt(new Date())
    const pay = () => ({ payer: wallet, nonce: hex(32), amount: 300n, validBefore: BigInt(validBefore) })
    const caps = { daily: 10_000n, monthly: null }
    const first = await windows.reserve(agentId, w, 300n, caps, { pay: pay(), nowSeconds: validBefore - 60 })
    t.equal(first.kind, 'init', 'no counter yet')
    const init = { day: 0n, month: 0n }
    const all = await Promise.all(
      Array.from({ length: 60 }, () =>
        windows.reserve(agentId, w, 300n, caps, { init, pay: pay(), nowSeconds: validBefore - 60 }),
      ),
    )
    t.equal(all.filter((r) => r.kind === 'ok').length, 33, '33 × 300 fit under 10,000, no more')
    t.ok(
      all.every((r) => r.kind === 'ok' || (r.kind === 'over' && r.cap === 'daily')),
      'the rest refused by the daily cap',
    )
    await windows.adjust(agentId, wallet, w, -300n)
    const peek = await windows.reserve(agentId, w, 0n, caps, { pay: pay(), peek: true, nowSeconds: validBefore - 60 })
    t.equal(peek.kind === 'peek' && peek.day, 9_600n, 'adjust reaches the same counter')
    // with the wallet balance checked: its unsettled set shares the agent's slot
    const u = await windows.reserve(agentId, w, 100n, caps, {
      init,
      pay: { ...pay(), amount: 100n },
      balance: 1_000n,
      nowSeconds: validBefore - 60,
    })
    t.equal(u.kind, 'init-unsettled')
    await windows.rebuildUnsettled(wallet, [])
    const again = await windows.reserve(agentId, w, 100n, caps, {
      init,
      pay: { ...pay(), amount: 100n },
      balance: 1_000n,
      nowSeconds: validBefore - 60,
    })
    t.equal(again.kind, 'ok')
  })

  t.test('rate limits exact under concurrency', async (t) => {
    const limiter = createFixedWindowLimiter(deps.redis, deps.key)
    const ids = Array.from({ length: 6 }, () => hex(8))
    const hits = await Promise.all(
      ids.flatMap((id) => Array.from({ length: 25 }, () => limiter.hit('paid', id, { max: 10, windowSeconds: 60 }))),
    )
    t.equal(hits.filter((h) => !h.limited).length, 60, 'ten per id pass, on whichever master holds the id')
  })

  t.test('login devices: a token renewed across slots', async (t) => {
    const devices = createLoginDevices(deps)
    const one = await devices.remember(undefined, 'e1')
    const two = await devices.remember(one, 'e2')
    t.equal(await devices.recognise(one, 'e1'), undefined, 'the old token ends')
    t.ok(await devices.recognise(two, 'e1'), 'the new one knows both accounts')
    t.ok(await devices.recognise(two, 'e2'))
  })

  t.test('the settlement queue (BullMQ) under a hash-tagged prefix', async (t) => {
    t.equal(queuePrefix(deps.config), `{${deps.config.redisPrefix}}`)
    const conn = bullConnection(deps.config)
    const workerConn = bullConnection(deps.config)
    const queue = settlementQueue(deps.config, conn)
    const done: string[] = []
    const worker = new Worker(
      queue.name,
      async (job) => {
        done.push(job.name)
        return 1
      },
      { connection: workerConn, prefix: queuePrefix(deps.config) },
    )
    t.teardown(async () => {
      await worker.close()
      await queue.close()
      conn.disconnect()
      workerConn.disconnect()
    })
    for (let i = 0; i < 5; i++) await queue.add(`job-${i}`, {})
    await queue.upsertJobScheduler('tick', { every: 200 }, { name: 'tick', data: {} })
    await until('five jobs and a scheduled one', async () => done.length >= 6 && done.includes('tick'), 20_000)
    t.ok(done.includes('job-4'))
  })

  t.test('a coordinated failover: the guard carries on, no nonce accepted twice', async (t) => {
    const credit = createPayerCredit(deps)
    const asset = hex(20)
    const payer = hex(20)
    await credit.setBalance(asset, payer, 10n ** 12n)
    const master = await cluster.masterOf(redisTag(payer))
    const seen = new Map<string, number>()
    let stop = false
    let errors = 0
    const load = (async () => {
      while (!stop) {
        const nonce = hex(32)
        const batch = await Promise.allSettled([
          credit.reserve({ payer, asset, nonce, value: 1n, validBefore, nowMs }),
          credit.reserve({ payer, asset, nonce, value: 1n, validBefore, nowMs }),
        ])
        for (const r of batch)
          if (r.status === 'fulfilled') {
            if (r.value.result === 'ok') seen.set(nonce, (seen.get(nonce) ?? 0) + 1)
          } else errors++
      }
    })()
    await until('some load before the failover', async () => seen.size > 50)
    const promoted = await cluster.failover(master)
    const before = seen.size
    await until('the guard to accept payments after the failover', async () => seen.size > before + 50)
    stop = true
    await load
    t.not(promoted, master)
    t.equal(await cluster.masterOf(redisTag(payer)), promoted, "the payer's slot moved to the promoted replica")
    t.ok(
      [...seen.values()].every((n) => n === 1),
      `no nonce accepted twice (${seen.size} accepted, ${errors} errors)`,
    )
    t.equal(
      await deps.redis.get(credit.keys.exposure(asset, payer)),
      String(seen.size),
      'exposure counts each accepted payment once',
    )
  })
})

import { spawn } from 'node:child_process'
import t, { type Test } from 'tap'
import { Redis } from 'ioredis'
import { sql } from 'kysely'
import { usdcAbi } from '../../../src/chain/usdc-abi.js'
import { bullConnection, settlementQueue } from '../../../src/queue/settlement-queue.js'
import { authorizationStates } from '../../../src/services/settlement/chain-ops.js'
import { claimServed } from '../../../src/ledger/transitions.js'
import { startWorkers } from '../../../workers/index.js'
import { freePort, startTestPlatform } from '../../helpers/platform.js'
import { newPayer, payMany } from '../../helpers/settlement.js'

/** A private, throwaway redis-server (no persistence), so the test may FLUSHALL it. */
async function privateRedis(t: Test): Promise<{ url: string; stop(): Promise<void> }> {
  const port = await freePort()
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: 'ignore' },
  )
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()))
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM')
    await exited
  }
  t.teardown(stop)
  const url = `redis://127.0.0.1:${port}`
  for (let i = 0; ; i++) {
    const r = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null })
    const ok = await r
      .connect()
      .then(() => r.ping())
      .catch(() => null)
    r.disconnect()
    if (ok === 'PONG') return { url, stop }
    if (i > 100) throw new Error('redis-server did not start')
    await new Promise((res) => setTimeout(res, 50))
  }
}

t.test(
  'FLUSHALL of Redis during a run: schedulers come back, the sweep re-enqueues, everything settles once',
  async (t) => {
    const { url: redisUrl, stop: stopRedis } = await privateRedis(t)
    const platform = await startTestPlatform(t, { env: { REDIS_URL: redisUrl } })
    const { deps, devnet } = platform
    const db = deps.db
    t.equal(deps.config.redisUrl, redisUrl, 'the platform runs on the private Redis')
    const payer = await newPayer(platform, 100_000_000n)
    const receiver = devnet.accounts.receiver.address
    const balance = () =>
      deps.chain.readContract({
        address: devnet.usdcAddress,
        abi: usdcAbi,
        functionName: 'balanceOf',
        args: [receiver],
      })
    const before = await balance()

    // work a dead worker left behind: claimed (`settling`), no batch, its job gone with Redis
    t.ok((await payMany(platform, payer.key, 10, 5)).every((s) => s === 200))
    const orphans = await claimServed(db, {
      network: deps.config.chain.caip2,
      asset: devnet.usdcAddress.toLowerCase(),
      limit: 100,
    })
    t.equal(orphans.length, 10, 'ten payments orphaned in settling')

    const workers = await startWorkers(deps, {
      everyMs: { 'settlement-tick': 200, 'recovery-sweep': 1000 },
      ensureEveryMs: 500,
      settler: { stuckAfterMs: 5000 },
    })
    t.teardown(() => workers.close())
    const during = payMany(platform, payer.key, 30, 5)
    await new Promise((r) => setTimeout(r, 700))
    const admin = new Redis(redisUrl)
    t.teardown(() => admin.disconnect())
    const flushedAt = new Date()
    t.equal(await admin.flushall(), 'OK', 'FLUSHALL')
    t.ok(
      (await during).every((s) => s === 200),
      'calls during the flush served',
    )
    t.ok(
      (await payMany(platform, payer.key, 10, 5)).every((s) => s === 200),
      'calls after the flush served',
    )

    const deadline = Date.now() + 60_000
    for (;;) {
      const open = await db
        .selectFrom('payments')
        .select('id')
        .where('status', 'in', ['verified', 'served', 'settling'])
        .execute()
      if (open.length === 0 || Date.now() > deadline) break
      await new Promise((r) => setTimeout(r, 250))
    }
    const conn = bullConnection(deps.config)
    const queue = settlementQueue(deps.config, conn)
    const schedulers = (await queue.getJobSchedulers()).map((s) => s.name ?? s.key)
    await queue.close()
    conn.disconnect()
    await workers.close()
    t.ok(
      schedulers.includes('settlement-tick') && schedulers.includes('recovery-sweep'),
      `job schedulers restored after the flush (${schedulers.join(', ')})`,
    )

    const all = await db.selectFrom('payments').selectAll().execute()
    t.equal(all.length, 50)
    t.ok(
      all.every((r) => r.status === 'settled'),
      `every payment settled: ${JSON.stringify(all.map((r) => r.status))}`,
    )
    const requeued = await db
      .selectFrom('payment_events')
      .select(['payment_id', 'created_at'])
      .where('type', '=', 'requeued')
      .where('reason', '=', 'recovered')
      .where(
        'payment_id',
        'in',
        orphans.map((o) => o.id),
      )
      .execute()
    t.equal(new Set(requeued.map((r) => r.payment_id)).size, 10, 'the sweep re-enqueued every orphan')
    t.ok(
      requeued.every((r) => r.created_at >= flushedAt),
      'after the flush',
    )
    const dup = await sql<{
      n: string
    }>`select count(*)::text as n from (select payment_id from payment_events where to_status = 'settled' group by payment_id having count(*) > 1) d`.execute(
      db,
    )
    t.equal(dup.rows[0]!.n, '0', 'no payment settled twice')
    const total = all.reduce((a, r) => a + BigInt(r.value), 0n)
    t.equal((await balance()) - before, total, 'receiver balance increase equals the sum of the payments')
    t.ok(
      (await authorizationStates(deps.chain, devnet.usdcAddress, all)).every(Boolean),
      'every authorization used on chain',
    )

    // everything on the private Redis closes before it stops
    admin.disconnect()
    await platform.proxy.close()
    await deps.close()
    await stopRedis()
  },
)

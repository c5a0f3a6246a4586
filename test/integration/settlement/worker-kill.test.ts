import t from 'tap'
import { spawnNode, type Child } from '../../helpers/child-process.js'
import { withDevnet } from '../../helpers/devnet.js'
import { startTestPlatform } from '../../helpers/platform.js'
import { TEST_DATABASE_URL, TEST_REDIS_URL } from '../../helpers/test-env.js'
import { newPayer, payMany } from '../../helpers/settlement.js'
import { until } from '../../helpers/until.js'

// Issue #28: with two workers and two relayers, `kill -9` of one worker (its relayer lock left in
// Redis, its claims `settling`) must not stall settlement. Before claims named their relayer, the
// payments it had claimed and not yet batched waited for the recovery sweep's stuckAfterMs (2 min).
/** the brief's 10 s, plus the relayer lock's TTL runs out first (10 s) and slack for a loaded machine */
const BOUND_MS = 20_000

t.test('kill -9 of one of two workers mid-batch: the other settles every payment within seconds', async (t) => {
  const devnet = await withDevnet(t)
  const keys = devnet.accounts.relayers.slice(0, 2).map((r) => r.privateKey)
  const platform = await startTestPlatform(t, { devnet, env: { RELAYER_PRIVATE_KEYS: keys.join(',') } })
  const { db } = platform.deps
  const payer = await newPayer(platform, 1_000_000_000n)
  const startWorker = (extra: Record<string, string> = {}): Child =>
    spawnNode(t, 'src/start/worker.ts', {
      ...platform.env,
      DATABASE_URL: TEST_DATABASE_URL,
      REDIS_URL: TEST_REDIS_URL,
      LOG_LEVEL: 'warn',
      SETTLEMENT_BATCH_WINDOW_MS: '200',
      ...extra,
    })
  const survivor = startWorker()

  for (const stage of ['after-claim', 'before-send', 'after-send'] as const) {
    t.test(`killed at ${stage}`, async (t) => {
      const since = new Date()
      // the doomed worker dies (SIGKILL) at its first batch, while paid calls keep coming
      const doomed = startWorker({ TOLLGATE_TEST_CRASH_AT: stage })
      let paying = true
      const statuses: number[] = []
      const load = (async () => {
        while (paying) statuses.push(...(await payMany(platform, payer.key, 4, 4)))
      })()
      const died = await doomed.exited
      const killedAt = Date.now()
      if (!t.same(died, { code: null, signal: 'SIGKILL' }, `the worker died of SIGKILL at ${stage}`))
        t.comment(doomed.stderr())
      // what it left behind, as a kill -9 would
      const left = await db
        .selectFrom('payments')
        .select('id')
        .where('created_at', '>=', since)
        .where('status', '=', 'settling')
        .execute()
      t.ok(left.length > 0, `it left claims settling (${left.length})`)
      // calls keep coming for a few seconds after the kill
      await new Promise((r) => setTimeout(r, 3_000))
      paying = false
      await load
      t.ok(
        statuses.every((s) => s === 200),
        `every call answered 200 (${statuses.length})`,
      )
      const open = () =>
        db
          .selectFrom('payments')
          .select('id')
          .where('created_at', '>=', since)
          .where('status', 'in', ['verified', 'served', 'settling'])
          .execute()
      await until(`every payment settled after the kill at ${stage}`, async () => (await open()).length === 0, BOUND_MS)
      const tookMs = Date.now() - killedAt
      t.ok(tookMs <= BOUND_MS, `settled ${(tookMs / 1000).toFixed(1)} s after the kill`)
      const rows = await db.selectFrom('payments').select('status').where('created_at', '>=', since).execute()
      t.equal(rows.length, statuses.length, 'one payment per call')
      t.ok(
        rows.every((r) => r.status === 'settled'),
        'every payment settled (none failed or requeued for good)',
      )
    })
  }
  t.test('the surviving worker stops cleanly', async (t) => {
    survivor.child.kill('SIGTERM')
    if (!t.same(await survivor.exited, { code: 0, signal: null })) t.comment(survivor.stderr())
  })
})

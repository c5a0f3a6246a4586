import t from 'tap'
import { bullConnection, settlementQueue } from '../../../src/queue/settlement-queue.js'
import { startWorkers } from '../../../workers/index.js'
import { startTestPlatform } from '../../helpers/platform.js'
import { startPrivateRedis } from '../../helpers/redis-server.js'
import { newPayer, payMany } from '../../helpers/settlement.js'
import { until } from '../../helpers/until.js'

// A Redis that is lost and comes back empty has none of the workers' schedulers. The workers
// re-assert them when their connection is up again, not only on their periodic timer (here set
// to an hour, so only the reconnect can bring them back within the test).
t.test('Redis restarted empty: schedulers are back on reconnect and payments settle', async (t) => {
  const redis = await startPrivateRedis(t)
  const platform = await startTestPlatform(t, { env: { REDIS_URL: redis.url } })
  const { deps } = platform
  const payer = await newPayer(platform, 100_000_000n)
  const workers = await startWorkers(deps, {
    everyMs: { 'settlement-tick': 200 },
    ensureEveryMs: 3_600_000,
  })
  t.teardown(() => workers.close())

  const conn = bullConnection(deps.config)
  const queue = settlementQueue(deps.config, conn)
  t.teardown(async () => {
    await queue.close()
    conn.disconnect()
  })
  const tick = async () => (await queue.getJobSchedulers()).some((s) => (s.name ?? s.key) === 'settlement-tick')
  t.ok(await tick(), 'the settlement tick is scheduled')

  await redis.restart()
  await until('the settlement tick scheduled again', tick, 15_000)
  t.pass('the settlement tick is scheduled again without waiting for the periodic re-assert')

  t.ok(
    (await payMany(platform, payer.key, 6, 3)).every((s) => s === 200),
    'calls after the restart served',
  )
  await until(
    'every payment settled',
    async () => {
      const open = await deps.db
        .selectFrom('payments')
        .select('id')
        .where('status', 'in', ['verified', 'served', 'settling'])
        .execute()
      return open.length === 0
    },
    30_000,
  )
  const settled = await deps.db.selectFrom('payments').select('id').where('status', '=', 'settled').execute()
  t.equal(settled.length, 6, 'the six payments after the restart settled')
})

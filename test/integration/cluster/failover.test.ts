import t from 'tap'
import { sql } from 'kysely'
import { usdcAbi } from '../../../src/chain/usdc-abi.js'
import { queuePrefix } from '../../../src/queue/settlement-queue.js'
import { redisTag } from '../../../src/redis-client.js'
import { authorizationStates } from '../../../src/services/settlement/chain-ops.js'
import { startWorkers } from '../../../workers/index.js'
import { startTestPlatform } from '../../helpers/platform.js'
import { startRedisCluster } from '../../helpers/redis-cluster.js'
import { newPayer, payMany } from '../../helpers/settlement.js'
import { until } from '../../helpers/until.js'

// The proxy and the workers on a Redis Cluster; the master holding the payer's keys is killed
// (kill -9) while paid calls run, and its replica promoted. Postgres decides what was paid: every
// call answered 200 settles exactly once, a call that met the failover is answered 503 and charged
// nothing, and calls are served again once the replica is master.
t.test('a Redis Cluster master killed mid-load: nothing double-accepted, nothing lost, 503s not charged', async (t) => {
  // a node is failed after 3 s unreachable: the replica takes over after ~4 s, longer than a call
  // waits for Redis (2 retries), so calls in between meet the outage
  const cluster = await startRedisCluster(t, { nodeTimeoutMs: 3000 })
  const platform = await startTestPlatform(t, { env: { REDIS_URL: cluster.url } })
  const { deps, devnet } = platform
  const db = deps.db
  t.equal(deps.config.redisUrl, cluster.url, 'the platform runs on the cluster')
  const payer = await newPayer(platform, 100_000_000n)
  const receiver = devnet.accounts.receiver.address
  const balance = () =>
    deps.chain.readContract({ address: devnet.usdcAddress, abi: usdcAbi, functionName: 'balanceOf', args: [receiver] })
  const before = await balance()
  const workers = await startWorkers(deps, {
    everyMs: { 'settlement-tick': 200, 'recovery-sweep': 1000 },
    ensureEveryMs: 500,
    settler: { stuckAfterMs: 5000 },
  })
  t.teardown(() => workers.close())

  const statuses: number[] = []
  const warm = await payMany(platform, payer.key, 5, 5)
  t.same(warm, [200, 200, 200, 200, 200], 'served on the cluster')
  statuses.push(...warm)

  // the payer as the proxy keys it (as recorded)
  const { payer: recorded } = await db.selectFrom('payments').select('payer').executeTakeFirstOrThrow()
  const master = await cluster.masterOf(redisTag(recorded))
  const queueMaster = await cluster.masterOf(queuePrefix(deps.config))
  t.comment(`payer's keys on ${master}, the settlement queue on ${queueMaster}`)
  const paid = async () =>
    Number(
      (
        await db
          .selectFrom('payments')
          .select((eb) => eb.fn.countAll<string>().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    )
  let stop = false
  const duringStatuses: number[] = []
  const during = (async () => {
    while (!stop) duringStatuses.push(...(await payMany(platform, payer.key, 6, 6)))
  })()
  await until('paid calls under way', async () => (await paid()) >= 20)
  const killedAt = Date.now()
  const promoted = await cluster.killMaster(master)
  t.comment(`master ${master} killed, replica ${promoted} promoted after ${Date.now() - killedAt} ms`)
  stop = true
  await during
  statuses.push(...duringStatuses)
  const refused = duringStatuses.filter((s) => s === 503).length
  t.ok(
    duringStatuses.every((s) => s === 200 || s === 503),
    `calls during the failover answered 200 or 503 (fail closed): ${JSON.stringify(duringStatuses)}`,
  )
  t.ok(refused > 0, `calls that met the outage were refused: ${refused} of ${duringStatuses.length} answered 503`)

  // service resumes: once the client follows the new master, every call is served
  await until('a paid call served after the failover', async () => {
    const [s] = await payMany(platform, payer.key, 1, 1)
    statuses.push(s!)
    return s === 200
  })
  const after = await payMany(platform, payer.key, 10, 5)
  statuses.push(...after)
  t.same(after, Array(10).fill(200), 'every call served after the failover')

  await until(
    'every payment settled',
    async () =>
      (await db.selectFrom('payments').select('id').where('status', 'in', ['verified', 'served', 'settling']).execute())
        .length === 0,
    90_000,
  )
  await workers.close()

  const all = await db.selectFrom('payments').selectAll().execute()
  const served = statuses.filter((s) => s === 200).length
  t.equal(all.length, served, `one payment per call answered 200 (${served}), none for a 503`)
  t.ok(
    all.every((r) => r.status === 'settled'),
    `every payment settled: ${JSON.stringify(all.map((r) => r.status))}`,
  )
  const dup = await sql<{ n: string }>`select count(*)::text as n from (
      select payment_id from payment_events where to_status = 'settled' group by payment_id having count(*) > 1) d`.execute(
    db,
  )
  t.equal(dup.rows[0]!.n, '0', 'no payment settled twice')
  const nonces = await sql<{ n: string }>`select count(*)::text as n from (
      select payer, nonce from payments group by payer, nonce having count(*) > 1) d`.execute(db)
  t.equal(nonces.rows[0]!.n, '0', 'no authorization accepted twice')
  const total = all.reduce((a, r) => a + BigInt(r.value), 0n)
  t.equal((await balance()) - before, total, 'the receiver got exactly the payments of the calls served')
  t.ok(
    (await authorizationStates(deps.chain, devnet.usdcAddress, all)).every(Boolean),
    'every authorization used on chain',
  )
})

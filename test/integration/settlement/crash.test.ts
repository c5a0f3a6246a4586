import t from 'tap'
import { Redis } from 'ioredis'
import { sql } from 'kysely'
import type { Hex } from 'viem'
import { loadConfig } from '../../../src/config.js'
import { usdcAbi } from '../../../src/chain/usdc-abi.js'
import { authorizationStates } from '../../../src/services/settlement/chain-ops.js'
import { createRelayerLock } from '../../../src/chain/relayer.js'
import { crashHooksFromEnv } from '../../../src/services/settlement/test-hooks.js'
import { spawnNode } from '../../helpers/child-process.js'
import { withDevnet } from '../../helpers/devnet.js'
import { startTestPlatform } from '../../helpers/platform.js'
import { TEST_DATABASE_URL, TEST_REDIS_URL, clearRedisPrefix, uniqueName } from '../../helpers/test-env.js'
import { newPayer, payMany } from '../../helpers/settlement.js'

t.test('the crash hook is inert unless set, and refused in production', async (t) => {
  t.equal(crashHooksFromEnv({}, { deployment: 'sandbox' }), undefined)
  t.equal(crashHooksFromEnv({ TOLLGATE_TEST_CRASH_AT: '' }, { deployment: 'production' }), undefined)
  t.throws(() => crashHooksFromEnv({ TOLLGATE_TEST_CRASH_AT: 'before-send' }, { deployment: 'production' }), /refused/)
  t.throws(() => crashHooksFromEnv({ TOLLGATE_TEST_CRASH_AT: 'later' }, { deployment: 'sandbox' }), /expected one of/)
  const hooks = crashHooksFromEnv({ TOLLGATE_TEST_CRASH_AT: 'after-send' }, { deployment: 'sandbox' })
  t.ok(hooks?.afterSend && !hooks.beforeSend && !hooks.afterClaim, 'only the named stage')
  // the production config the worker would load refuses to start with the hook
  const prod = loadConfig({
    TOLLGATE_DEPLOYMENT: 'production',
    DATABASE_URL: TEST_DATABASE_URL,
    REDIS_URL: TEST_REDIS_URL,
    RPC_URL: 'http://127.0.0.1:1',
    RELAYER_PRIVATE_KEYS: '0x' + '11'.repeat(32),
    TOLLGATE_MASTER_KEY: '22'.repeat(32),
    TOLLGATE_RECEIVER_ADDRESS: '0x' + '33'.repeat(20),
  })
  t.throws(() => crashHooksFromEnv({ TOLLGATE_TEST_CRASH_AT: 'after-claim' }, prod), /refused/)
})

t.test(
  'relayer lock: renewed while held, free within its TTL after a holder dies, held() false once lost',
  async (t) => {
    const redis = new Redis(TEST_REDIS_URL)
    const prefix = uniqueName('tglock')
    t.teardown(async () => {
      await clearRedisPrefix(prefix)
      redis.disconnect()
    })
    const lock = createRelayerLock(redis, (...p) => [prefix, ...p].join(':'), 300)
    const seen: boolean[] = []
    const held = await lock.hold('0xabc', async (stillHeld) => {
      t.equal(await lock.acquire('0xabc'), null, 'exclusive')
      await new Promise((r) => setTimeout(r, 700)) // past the TTL: renewal keeps it
      t.equal(await lock.acquire('0xabc'), null, 'still exclusive after more than one TTL')
      seen.push(stillHeld())
      await redis.del(`${prefix}:settlement:relayer-lock:0xabc`) // lost (a flush, an expiry)
      await new Promise((r) => setTimeout(r, 250))
      seen.push(stillHeld())
      return 'done'
    })
    t.same(held, { value: 'done' })
    t.same(seen, [true, false], 'held() reports the loss')
    // a holder that dies without releasing (kill -9): free again once the TTL passes
    t.ok(await lock.acquire('0xdef'))
    t.equal(await lock.acquire('0xdef'), null)
    await new Promise((r) => setTimeout(r, 400))
    t.ok(await lock.acquire('0xdef'), 'free after the TTL')
  },
)

t.test('kill -9 of a worker process mid-batch; a restarted worker settles every payment exactly once', async (t) => {
  const devnet = await withDevnet(t)
  // one relayer: the restarted worker must recover the very relayer the dead one held
  const relayerKey = devnet.accounts.relayers[0]!.privateKey
  const platform = await startTestPlatform(t, { devnet, env: { RELAYER_PRIVATE_KEYS: relayerKey } })
  const { deps } = platform
  const db = deps.db
  const payer = await newPayer(platform, 100_000_000n)
  const receiver = devnet.accounts.receiver.address
  const balance = () =>
    deps.chain.readContract({ address: devnet.usdcAddress, abi: usdcAbi, functionName: 'balanceOf', args: [receiver] })

  /** `node --import tsx src/start/worker.ts` on this test's schema, prefix and chain */
  const startWorker = (extra: Record<string, string> = {}) =>
    spawnNode(t, 'src/start/worker.ts', {
      ...platform.env,
      DATABASE_URL: TEST_DATABASE_URL,
      REDIS_URL: TEST_REDIS_URL,
      LOG_LEVEL: 'warn',
      SETTLEMENT_BATCH_WINDOW_MS: '200',
      ...extra,
    })
  const within = <T>(p: Promise<T>, ms: number, what: string) =>
    Promise.race([
      p,
      new Promise<never>((_, reject) =>
        setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms).unref(),
      ),
    ])

  for (const stage of ['before-send', 'after-send'] as const) {
    t.test(`killed at ${stage}`, async (t) => {
      const before = await balance()
      const since = new Date()
      t.ok(
        (await payMany(platform, payer.key, 20, 5)).every((s) => s === 200),
        '20 paid calls served',
      )
      const ids = (await db.selectFrom('payments').select('id').where('created_at', '>=', since).execute()).map(
        (r) => r.id,
      )
      t.equal(ids.length, 20)

      const crashing = startWorker({ TOLLGATE_TEST_CRASH_AT: stage })
      const end = await within(crashing.exited, 90_000, 'crashing worker')
      if (!t.same(end, { code: null, signal: 'SIGKILL' }, `the worker died of SIGKILL at ${stage}`))
        t.comment(crashing.stderr())

      // what the dead worker left: one pending batch holding every payment, all `settling`
      const batches = await db.selectFrom('settlement_batches').selectAll().where('created_at', '>=', since).execute()
      t.equal(batches.length, 1, 'one batch recorded')
      const batch = batches[0]!
      t.equal(batch.status, 'pending')
      const rows = await db.selectFrom('payments').selectAll().where('id', 'in', ids).execute()
      t.ok(
        rows.every((r) => r.status === 'settling'),
        'every payment left settling',
      )
      const onChain = await deps.chain.getTransactionReceipt({ hash: batch.tx_hash as Hex }).catch(() => null)
      if (stage === 'before-send') t.equal(onChain, null, 'killed before send: the transaction never left')
      else t.equal(onChain?.status, 'success', 'killed after send: the transaction was mined, the receipt never read')

      const fresh = startWorker()
      const deadline = Date.now() + 90_000
      for (;;) {
        const open = await db
          .selectFrom('payments')
          .select('id')
          .where('id', 'in', ids)
          .where('status', 'in', ['served', 'settling'])
          .execute()
        if (open.length === 0 || Date.now() > deadline) break
        await new Promise((r) => setTimeout(r, 250))
      }
      fresh.child.kill('SIGTERM')
      if (
        !t.same(
          await within(fresh.exited, 30_000, 'restarted worker'),
          { code: 0, signal: null },
          'restarted worker shut down cleanly',
        )
      )
        t.comment(fresh.stderr())

      const after = await db.selectFrom('payments').selectAll().where('id', 'in', ids).execute()
      t.ok(
        after.every((r) => r.status === 'settled'),
        `every payment settled: ${JSON.stringify(after.map((r) => r.status))}`,
      )
      // the recorded batch's transaction, or (when the restart came more than the replacement delay after
      // the batch was signed, as on a loaded machine) its fee-bumped replacement: same row, same nonce
      const final = await db
        .selectFrom('settlement_batches')
        .select(['tx_hash', 'nonce'])
        .where('id', '=', batch.id)
        .executeTakeFirstOrThrow()
      t.equal(String(final.nonce), String(batch.nonce), 'the recorded batch, at its nonce (replaced at most)')
      t.ok(
        after.every((r) => r.tx_hash === final.tx_hash),
        `by the recorded batch transaction${final.tx_hash === batch.tx_hash ? '' : ' (fee-bumped replacement)'}`,
      )
      const total = after.reduce((a, r) => a + BigInt(r.value), 0n)
      t.equal((await balance()) - before, total, 'receiver balance increase equals the sum of the payments')
      const events = await sql<{
        n: string
      }>`select count(*)::text as n from payment_events where payment_id = any(${ids}::uuid[]) and to_status = 'settled'`.execute(
        db,
      )
      t.equal(events.rows[0]!.n, '20', 'one settled event per payment')
      const states = await authorizationStates(deps.chain, devnet.usdcAddress, after)
      t.ok(states.every(Boolean), 'every authorization used on chain')
      t.equal(
        (
          await db
            .selectFrom('settlement_batches')
            .select('status')
            .where('id', '=', batch.id)
            .executeTakeFirstOrThrow()
        ).status,
        'confirmed',
      )
      t.equal(
        (await db.selectFrom('settlement_batches').select('id').where('created_at', '>=', since).execute()).length,
        1,
        'never submitted again',
      )
    })
  }
})

/**
 * kill -9 of the worker process in the middle of a deferred collection, then a restarted worker:
 * every voucher is collected exactly once on chain (one VoucherCollected per voucher id, for its
 * whole aggregate), none is lost, every payment ends settled and nothing is left outstanding.
 *
 * The worker (src/start/worker.ts) runs as a child process; TOLLGATE_TEST_DEFERRED_CRASH_AT makes
 * it SIGKILL itself at the named stage of its first collection (after its payments were claimed,
 * or after its collectMany was mined and before it recorded anything).
 */
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { createPublicClient, getAddress, http, type Address } from 'viem'
import { usdcAbi } from '../../../src/chain/usdc-abi.js'
import { deferredEscrowAbi } from '../../../src/schemes/deferred/escrow-abi.js'
import { deferredCrashHooksFromEnv } from '../../../src/services/deferred-collect/test-hooks.js'
import { announceRegistryChange } from '../../../src/services/registry-events.js'
import { spawnNode } from '../../helpers/child-process.js'
import { deferredBuyer, payDeferredCalls } from '../../helpers/deferred-buyer.js'
import { decodeRequired } from '../../helpers/pay.js'
import { startTestPlatform } from '../../helpers/platform.js'
import { TEST_DATABASE_URL, TEST_REDIS_URL } from '../../helpers/test-env.js'
import { until } from '../../helpers/until.js'

const fixtures = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../fixtures/handlers')
const ECHO = '/tollgate/toolbox/echo?msg=hi'

t.test('the crash hook is inert unless set, and refused in production and for an unknown stage', async (t) => {
  t.equal(deferredCrashHooksFromEnv({}, { deployment: 'sandbox' }), undefined)
  t.throws(
    () => deferredCrashHooksFromEnv({ TOLLGATE_TEST_DEFERRED_CRASH_AT: 'after-send' }, { deployment: 'production' }),
    /refused/,
  )
  t.throws(
    () => deferredCrashHooksFromEnv({ TOLLGATE_TEST_DEFERRED_CRASH_AT: 'later' }, { deployment: 'sandbox' }),
    /expected one of/,
  )
  const hooks = deferredCrashHooksFromEnv({ TOLLGATE_TEST_DEFERRED_CRASH_AT: 'after-send' }, { deployment: 'sandbox' })
  t.ok(hooks?.afterSend && !hooks.afterClaim, 'only the named stage')
})

t.test('kill -9 mid-collection; a restarted worker collects every voucher exactly once', async (t) => {
  const platform = await startTestPlatform(t, { proxy: { handlersDir: fixtures } })
  const { deps, proxy, devnet } = platform
  const seller = getAddress(devnet.accounts.receiver.address)
  const pub = createPublicClient({ chain: devnet.chain, transport: http(devnet.rpcUrl) })
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
  const sellerBalance = () =>
    pub.readContract({ address: devnet.usdcAddress, abi: usdcAbi, functionName: 'balanceOf', args: [seller] })

  /** `node --import tsx src/start/worker.ts` on this test's schema, prefix and chain, collecting every 200 ms */
  const startWorker = (extra: Record<string, string> = {}) =>
    spawnNode(t, 'src/start/worker.ts', {
      ...platform.env,
      DATABASE_URL: TEST_DATABASE_URL,
      REDIS_URL: TEST_REDIS_URL,
      LOG_LEVEL: 'warn',
      DEFERRED_COLLECT_THRESHOLD: '1',
      DEFERRED_COLLECT_EVERY_MS: '200',
      DEFERRED_COLLECT_STUCK_SECONDS: '1',
      ...extra,
    })

  /** `n` paid deferred calls of a new buyer (one voucher id); its last voucher */
  async function calls(n: number) {
    const buyer = await deferredBuyer(devnet, 10n ** 6n)
    await buyer.deposit(seller, 100_000n)
    const last = await payDeferredCalls(proxy, buyer, ECHO, n)
    return { buyer: buyer.address, last }
  }
  const statuses = async (buyers: Address[]) =>
    (
      await deps.db
        .selectFrom('payments')
        .select('status')
        .where(
          'payer',
          'in',
          buyers.map((b) => b.toLowerCase()),
        )
        .execute()
    ).map((r) => r.status)

  for (const stage of ['after-claim', 'after-send'] as const) {
    t.test(`killed ${stage}`, async (t) => {
      const before = await sellerBalance()
      const fromBlock = await pub.getBlockNumber()
      const paid = [await calls(4), await calls(3)]
      const buyers = paid.map((p) => p.buyer)
      const total = paid.reduce((a, p) => a + p.last.valueAggregate, 0n)

      const crashing = startWorker({ TOLLGATE_TEST_DEFERRED_CRASH_AT: stage })
      if (!t.same(await crashing.exited, { code: null, signal: 'SIGKILL' }, `the worker died of SIGKILL ${stage}`))
        t.comment(crashing.stderr())
      t.same(new Set(await statuses(buyers)), new Set(['settling']), 'the dead worker left every payment settling')
      const sent = (await sellerBalance()) - before
      t.equal(
        sent,
        stage === 'after-send' ? total : 0n,
        stage === 'after-send' ? 'its collectMany was mined' : 'nothing sent',
      )

      const fresh = startWorker()
      await until('every payment settled', async () => (await statuses(buyers)).every((s) => s === 'settled'), 90_000)
      fresh.child.kill('SIGTERM')
      if (!t.same(await fresh.exited, { code: 0, signal: null }, 'the restarted worker shut down cleanly'))
        t.comment(fresh.stderr())

      t.equal((await sellerBalance()) - before, total, 'the seller got every voucher, once')
      for (const p of paid) {
        const events = await pub.getContractEvents({
          address: devnet.deferredEscrowAddress,
          abi: deferredEscrowAbi,
          eventName: 'VoucherCollected',
          args: { buyer: p.buyer },
          fromBlock,
        })
        t.same(
          events.map((e) => [e.args.voucherId, e.args.amount]),
          [[p.last.id, p.last.valueAggregate]],
          'one collection of the voucher id, for its whole aggregate',
        )
        const [outstanding, collectable] = await pub.readContract({
          address: devnet.deferredEscrowAddress,
          abi: deferredEscrowAbi,
          functionName: 'getOutstandingAndCollectableAmount',
          args: [p.last],
        })
        t.same([outstanding, collectable], [0n, 0n], 'nothing outstanding on chain')
        const head = await deps.db
          .selectFrom('deferred_vouchers')
          .select(['nonce', 'value_aggregate', 'collected'])
          .where('buyer', '=', p.buyer.toLowerCase())
          .orderBy('nonce', 'desc')
          .limit(1)
          .executeTakeFirstOrThrow()
        t.same(
          head,
          {
            nonce: String(p.last.nonce),
            value_aggregate: String(p.last.valueAggregate),
            collected: String(p.last.valueAggregate),
          },
          'the store knows it was collected',
        )
      }
    })
  }
})

import Fastify from 'fastify'
import t from 'tap'
import { privateKeyToAccount } from 'viem/accounts'
import { loadConfig } from '../../../src/config.js'
import { proxyCrashHooksFromEnv, type ProxyCrashStage } from '../../../src/proxy/paid-call/test-hooks.js'
import { createUsers } from '../../../src/services/accounts/users.js'
import { createPublishing } from '../../../src/services/publishing/publishing.js'
import { authorizationStates } from '../../../src/services/settlement/chain-ops.js'
import { createSettler } from '../../../src/services/settlement/settler.js'
import { spawnNode } from '../../helpers/child-process.js'
import { decodeRequired, signFor, v2Header } from '../../helpers/pay.js'
import { freePort, startTestPlatform } from '../../helpers/platform.js'
import { TEST_DATABASE_URL, TEST_REDIS_URL } from '../../helpers/test-env.js'
import { until } from '../../helpers/until.js'
import { newPayer, paidPath } from '../../helpers/settlement.js'

// six proxy processes start one after another, each loading every hosted handler
t.setTimeout(900_000)

t.test('the proxy crash hook is inert unless set, and refused in production', async (t) => {
  t.equal(proxyCrashHooksFromEnv({}, { deployment: 'sandbox' }), undefined)
  t.equal(proxyCrashHooksFromEnv({ TOLLGATE_TEST_PROXY_CRASH_AT: '' }, { deployment: 'production' }), undefined)
  t.throws(
    () => proxyCrashHooksFromEnv({ TOLLGATE_TEST_PROXY_CRASH_AT: 'after-record' }, { deployment: 'production' }),
    /refused/,
  )
  t.throws(
    () => proxyCrashHooksFromEnv({ TOLLGATE_TEST_PROXY_CRASH_AT: 'later' }, { deployment: 'sandbox' }),
    /expected one of/,
  )
  t.same(
    Object.keys(proxyCrashHooksFromEnv({ TOLLGATE_TEST_PROXY_CRASH_AT: 'after-dispatch' }, { deployment: 'sandbox' })!),
    ['after-dispatch'],
  )
  const prod = loadConfig({
    TOLLGATE_DEPLOYMENT: 'production',
    DATABASE_URL: TEST_DATABASE_URL,
    REDIS_URL: TEST_REDIS_URL,
    RPC_URL: 'http://127.0.0.1:1',
    RELAYER_PRIVATE_KEYS: '0x' + '11'.repeat(32),
    TOLLGATE_MASTER_KEY: '22'.repeat(32),
    TOLLGATE_RECEIVER_ADDRESS: '0x' + '33'.repeat(20),
  })
  t.throws(() => proxyCrashHooksFromEnv({ TOLLGATE_TEST_PROXY_CRASH_AT: 'after-reserve' }, prod), /refused/)
})

/**
 * kill -9 of the proxy at each point of a paid call, hosted and upstream; then the settlement
 * worker's round and sweep decide. The buyer always ends uncharged (no transfer on chain) or
 * served and charged; charged without an answer only when the outcome was committed and the answer
 * had not left (`after-outcome`), which the payment lookup by payer and nonce tells the buyer.
 */
t.test('kill -9 of the proxy at each stage of a paid call: uncharged, or served and charged', async (t) => {
  const upstream = Fastify()
  upstream.get('/*', async () => ({ upstream: 'ok' }))
  await upstream.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(() => upstream.close())
  const origin = `http://127.0.0.1:${(upstream.server.address() as { port: number }).port}/api`

  const platform = await startTestPlatform(t, {
    env: { TOLLGATE_ALLOW_PRIVATE_UPSTREAMS: 'true', TOLLGATE_MASTER_KEY: '42'.repeat(32) },
  })
  const { deps, devnet } = platform
  const user = await createUsers(deps).create(`crash-${Date.now()}@example.com`, 'correct horse battery staple')
  const pub = createPublishing(deps)
  await pub.claimNamespace({ userId: user.id }, { namespace: 'crashco', display_name: 'Crash Co' })
  await pub.createService({ userId: user.id }, 'crashco', { name: 'api', pay_to: devnet.accounts.receiver.address })
  await pub.createEndpoint({ userId: user.id }, 'crashco', 'api', {
    slug: 'answer',
    methods: ['GET'],
    price: '1000',
    upstream_url: origin,
  })
  const payer = await newPayer(platform, 10_000_000n)
  const account = privateKeyToAccount(payer.key)
  // the sweep voids `verified` payments at once here (in production: after the longest call, plus a minute)
  const settler = createSettler(deps, { voidVerifiedAfterMs: 0, stuckAfterMs: 0 })

  const startProxy = async (stage: ProxyCrashStage) => {
    const port = await freePort()
    const url = `http://127.0.0.1:${port}`
    const proxy = spawnNode(t, 'src/start/proxy.ts', {
      ...platform.env,
      DATABASE_URL: TEST_DATABASE_URL,
      REDIS_URL: TEST_REDIS_URL,
      LOG_LEVEL: 'warn',
      PROXY_PORT: String(port),
      PROXY_URL: url,
      HOST: '127.0.0.1',
      TOLLGATE_TEST_PROXY_CRASH_AT: stage,
    })
    await until(
      `the proxy at ${stage} listens`,
      async () => (await fetch(`${url}/healthz`).catch(() => null))?.ok,
      60_000,
    ).catch((err) => {
      t.comment(proxy.stderr())
      throw err
    })
    return { url, exited: proxy.exited, stderr: proxy.stderr }
  }

  const cases: Array<{
    path: string
    stage: ProxyCrashStage
    charged: boolean
    row: 'none' | 'verified' | 'served' | 'voided'
  }> = [
    { path: paidPath, stage: 'after-reserve', charged: false, row: 'none' },
    { path: paidPath, stage: 'after-dispatch', charged: false, row: 'none' },
    { path: paidPath, stage: 'after-outcome', charged: true, row: 'served' },
    { path: '/crashco/api/answer', stage: 'after-record', charged: false, row: 'verified' },
    { path: '/crashco/api/answer', stage: 'after-dispatch', charged: false, row: 'verified' },
    { path: '/crashco/api/answer', stage: 'after-outcome', charged: true, row: 'served' },
  ]
  for (const c of cases) {
    t.test(`${c.path.startsWith('/crashco') ? 'upstream' : 'hosted'} call, killed ${c.stage}`, async (t) => {
      const proxy = await startProxy(c.stage)
      const required = decodeRequired((await fetch(proxy.url + c.path)).headers.get('payment-required'))
      const signed = await signFor(account, required)
      const answer = await fetch(proxy.url + c.path, {
        headers: { 'payment-signature': v2Header(required, signed) },
      }).then(
        (r) => r.status,
        () => 'no answer',
      )
      t.equal(answer, 'no answer', 'the buyer got no answer')
      if (!t.same(await proxy.exited, { code: null, signal: 'SIGKILL' }, `the proxy died at ${c.stage}`))
        t.comment(proxy.stderr())

      const nonce = signed.authorization.nonce.toLowerCase()
      const row = await deps.db
        .selectFrom('payments')
        .selectAll()
        .where('payer', '=', payer.address.toLowerCase())
        .where('nonce', '=', nonce)
        .executeTakeFirst()
      t.equal(row?.status ?? 'none', c.row, `left ${c.row}`)

      // the worker's next round and sweep decide what the dead proxy left
      await settler.sweep()
      await settler.runOnce()
      const after =
        row &&
        (await deps.db.selectFrom('payments').select(['status']).where('id', '=', row.id).executeTakeFirstOrThrow())
      t.equal(
        after?.status ?? 'none',
        c.charged ? 'settled' : row ? 'voided' : 'none',
        c.charged ? 'settled: served and charged' : 'never charged',
      )
      const [used] = await authorizationStates(deps.chain, devnet.usdcAddress, [
        { scheme: 'exact', payer: payer.address, nonce } as never,
      ])
      t.equal(used, c.charged, c.charged ? 'the transfer happened once' : 'no transfer on chain')
    })
  }
})

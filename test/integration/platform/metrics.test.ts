import t from 'tap'
import type { Deps } from '../../../src/deps.js'
import { buildProxyApp } from '../../../src/http/proxy-app.js'
import { buildWebApp } from '../../../src/http/web-app.js'
import { METRICS_SETTLE_LAG_MS } from '../../../src/services/metrics/settlement-metrics.js'
import { createSettler } from '../../../src/services/settlement/settler.js'
import { relayerFundsCheck } from '../../../workers/relayer-funds-check.js'
import { startTestPlatform } from '../../helpers/platform.js'
import { newPayer, payMany } from '../../helpers/settlement.js'

const TOKEN = 'op-secret-for-tests'

/** The value of one sample line (`name{labels} value`) of a Prometheus text body. */
function sample(text: string, line: string): number | undefined {
  const hit = text.split('\n').find((l) => l.startsWith(line + ' '))
  return hit === undefined ? undefined : Number(hit.slice(line.length + 1))
}

t.test('operator observability on the web role', async (t) => {
  const platform = await startTestPlatform(t, { env: { TOLLGATE_OPERATOR_TOKEN: TOKEN } })
  const { deps } = platform
  const web = async (d: Deps = deps) => {
    const app = await buildWebApp(d, { logger: false })
    t.teardown(() => app.close())
    return app
  }
  const app = await web()
  const payer = await newPayer(platform, 10_000_000n)
  t.same(await payMany(platform, payer.key, 6, 3), [200, 200, 200, 200, 200, 200])
  await createSettler(deps, { batchSize: 4 }).runOnce(30_000)
  // histograms count a batch or payment once it is METRICS_SETTLE_LAG_MS old
  await new Promise((r) => setTimeout(r, METRICS_SETTLE_LAG_MS + 100))

  t.test('/metrics: operator token required, settlement series present', async (t) => {
    const denied = await app.inject('/metrics')
    t.equal(denied.statusCode, 401)
    t.equal(denied.json().code, 'operator_only')
    t.equal((await app.inject({ url: '/metrics', headers: { authorization: 'Bearer wrong' } })).statusCode, 401)
    const r = await app.inject({ url: '/metrics', headers: { authorization: `Bearer ${TOKEN}` } })
    t.equal(r.statusCode, 200, r.body.slice(0, 300))
    t.match(r.headers['content-type'], /text\/plain/)
    const text = r.body
    t.equal(sample(text, 'tollgate_payments{status="settled"}'), 6)
    t.equal(sample(text, 'tollgate_payments{status="served"}'), 0)
    t.equal(sample(text, 'tollgate_settlement_batch_size_count'), 2, 'two batches (4 + 2)')
    t.equal(sample(text, 'tollgate_settlement_batch_size_sum'), 6)
    t.equal(sample(text, 'tollgate_settlement_batch_size_bucket{le="2"}'), 1)
    t.equal(sample(text, 'tollgate_settlement_latency_seconds_count'), 6)
    t.ok((sample(text, 'tollgate_settlement_latency_seconds_sum') ?? -1) > 0, 'latency recorded')
    t.equal(sample(text, 'tollgate_settlement_latency_seconds_bucket{le="+Inf"}'), 6)
    t.ok(sample(text, 'tollgate_settlement_queue_jobs{state="waiting"}') !== undefined, 'queue depth')
    t.match(text, /# TYPE tollgate_settlement_failures_total counter/)
    const relayer = platform.devnet.accounts.relayers[0]!.address
    t.ok((sample(text, `tollgate_relayer_balance_eth{relayer="${relayer}"}`) ?? 0) > 0, 'relayer balance gauge')
    t.equal(sample(text, 'tollgate_relayer_min_balance_eth'), 0.005)
  })

  t.test('histograms are incremental: later scrapes add only what settled since, never twice', async (t) => {
    const scrape = async () =>
      (await app.inject({ url: '/metrics', headers: { authorization: `Bearer ${TOKEN}` } })).body
    const before = await scrape()
    t.equal(sample(before, 'tollgate_settlement_batch_size_count'), 2)
    t.same(await payMany(platform, payer.key, 3, 3), [200, 200, 200])
    await createSettler(deps, { batchSize: 4 }).runOnce(30_000)
    const early = await scrape()
    t.equal(sample(early, 'tollgate_settlement_batch_size_count'), 2, 'a batch younger than the lag is not counted yet')
    t.equal(sample(early, 'tollgate_payments{status="settled"}'), 9, 'the status gauge is exact at once')
    t.equal(sample(early, 'tollgate_payments{status="served"}'), 0)
    await new Promise((r) => setTimeout(r, METRICS_SETTLE_LAG_MS + 100))
    const after = await scrape()
    t.equal(sample(after, 'tollgate_settlement_batch_size_count'), 3, 'the new batch counted')
    t.equal(sample(after, 'tollgate_settlement_batch_size_sum'), 9)
    t.equal(sample(after, 'tollgate_settlement_batch_size_bucket{le="5"}'), 3)
    t.equal(sample(after, 'tollgate_settlement_latency_seconds_count'), 9, 'three more settled payments')
    const again = await scrape()
    t.equal(sample(again, 'tollgate_settlement_batch_size_count'), 3, 'nothing counted twice')
    t.equal(sample(again, 'tollgate_settlement_latency_seconds_count'), 9)
    t.equal(sample(again, 'tollgate_payments{status="settled"}'), 9, 'final statuses never counted twice')
  })

  t.test('/metrics is open in the sandbox without an operator token, never in production', async (t) => {
    const open = await web({ ...deps, config: { ...deps.config, operatorToken: undefined } })
    t.equal((await open.inject('/metrics')).statusCode, 200)
    const prod = await web({ ...deps, config: { ...deps.config, operatorToken: undefined, deployment: 'production' } })
    t.equal((await prod.inject('/metrics')).statusCode, 401)
  })

  t.test('failures by reason are counted', async (t) => {
    const row = await deps.db.selectFrom('payments').select('id').executeTakeFirstOrThrow()
    await deps.db
      .insertInto('payments')
      .values({
        ...(await deps.db.selectFrom('payments').selectAll().where('id', '=', row.id).executeTakeFirstOrThrow()),
        id: '00000000-0000-4000-8000-000000000001',
        nonce: '0x' + '11'.repeat(32),
        status: 'failed',
        failure_reason: 'insufficient_funds',
        tx_hash: null,
        settled_at: null,
      } as never)
      .execute()
    const r = await app.inject({ url: '/metrics', headers: { authorization: `Bearer ${TOKEN}` } })
    t.equal(sample(r.body, 'tollgate_settlement_failures_total{reason="insufficient_funds"}'), 1)
    await deps.db.deleteFrom('payments').where('id', '=', '00000000-0000-4000-8000-000000000001').execute()
  })

  t.test('/ops/queues: Bull Board behind operator auth', async (t) => {
    const denied = await app.inject('/ops/queues')
    t.equal(denied.statusCode, 401)
    t.equal(denied.json().code, 'operator_only')
    t.equal((await app.inject('/ops/queues?token=wrong')).statusCode, 401)
    const page = await app.inject({ url: '/ops/queues', headers: { authorization: `Bearer ${TOKEN}` } })
    t.equal(page.statusCode, 200)
    t.match(page.headers['content-type'], /html/)
    // a browser: the token once in the URL, then the session cookie for assets and the API
    const login = await app.inject(`/ops/queues?token=${TOKEN}`)
    t.equal(login.statusCode, 200)
    const setCookie = String(login.headers['set-cookie'])
    t.match(setCookie, /tollgate_ops=.+; Path=\/ops\/queues; HttpOnly; SameSite=Strict/)
    const cookie = setCookie.split(';')[0]!
    const api = await app.inject({ url: '/ops/queues/api/queues', headers: { cookie } })
    t.equal(api.statusCode, 200, api.body.slice(0, 200))
    t.ok(
      api.json().queues.some((q: { name: string }) => q.name === 'settlement'),
      'the settlement queue is on the board',
    )
    t.equal(
      (await app.inject({ url: '/ops/queues/api/queues', headers: { cookie: 'tollgate_ops=forged' } })).statusCode,
      401,
    )
    const listed = await app.inject({
      url: '/ops/queues/api/queues?activeQueue=settlement&status=failed&page=1',
      headers: { cookie },
    })
    t.equal(listed.statusCode, 200, 'a real list query')
    for (const [qs, param] of [
      ['activeQueue=settlement&status=%00', 'status'],
      ['activeQueue=%ff', 'activeQueue'],
      ['activeQueue=nope', 'activeQueue'],
    ] as const) {
      const bad = await app.inject({ url: `/ops/queues/api/queues?${qs}`, headers: { cookie } })
      t.equal(bad.statusCode, 400, `${qs}: 400, not the board's 500`)
      t.match(bad.json(), { code: 'invalid_parameter', param })
    }
    const docs = await app.inject('/docs/json')
    if (docs.statusCode === 200)
      t.notOk(
        Object.keys(docs.json().paths).some((p) => p.startsWith('/ops') || p === '/metrics'),
        'operator routes stay out of the OpenAPI document',
      )
  })

  t.test('/readyz fails `relayers` below RELAYER_MIN_ETH_WEI on web and proxy', async (t) => {
    const ok = await app.inject('/readyz')
    t.equal(ok.statusCode, 200, ok.body)
    t.ok(ok.json().checks.relayers.ok)
    const poor = {
      ...deps,
      config: { ...deps.config, settlement: { ...deps.config.settlement, relayerMinEthWei: 10n ** 30n } },
    }
    for (const build of [buildWebApp, buildProxyApp]) {
      const a = await build(poor, { logger: false })
      t.teardown(() => a.close())
      const r = await a.inject('/readyz')
      t.equal(r.statusCode, 503)
      t.same(r.json().failing, ['relayers'])
      t.match(r.json().checks.relayers.error, /relayer ETH below/)
    }
  })

  t.test('the worker warns while a relayer is low on ETH', async (t) => {
    const warnings: unknown[] = []
    const log = { info() {}, error() {}, warn: (o: unknown) => void warnings.push(o) } as never
    const settler = createSettler(deps)
    await relayerFundsCheck.process({ deps, settler, log }, {} as never)
    t.equal(warnings.length, 0, 'no warning with funded relayers')
    const poor = {
      ...deps,
      config: { ...deps.config, settlement: { ...deps.config.settlement, relayerMinEthWei: 10n ** 30n } },
    }
    await relayerFundsCheck.process({ deps: poor, settler, log }, {} as never)
    t.equal(warnings.length, deps.config.relayerKeys.length, 'one warning per low relayer')
    t.match(warnings[0], { relayer: /^0x/, minEth: String(10n ** 12n) })
  })
})

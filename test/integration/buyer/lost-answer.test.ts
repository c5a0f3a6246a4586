import path from 'node:path'
import t from 'tap'
import { runCli, type Io } from '../../../src/cli/main.js'
import { lookupPayment, PaidCallFailedError, wrapFetch } from '../../../src/client.js'
import { buildProxyApp } from '../../../src/http/proxy-app.js'
import { repoRoot } from '../../helpers/child-process.js'
import { startBuyerPlatform } from '../../helpers/buyer.js'
import { startCrashProxy } from '../../helpers/crash-proxy.js'

const fixtures = path.resolve(repoRoot, 'test/fixtures/handlers')

t.test(
  'a proxy killed between recording `served` and answering: the buyer learns by payer and nonce that it was charged and the answer lost',
  async (t) => {
    const p = await startBuyerPlatform(t)
    const agent = await p.agent({ fund: 1_000_000n })

    // the proxy role in its own process, which dies (SIGKILL) as it starts writing a paid answer
    const { origin, port, exited } = await startCrashProxy(t, p.env, { CRASH_BEFORE_PAID_ANSWER: '1' })

    const url = `${origin}/tollgate/toolbox/echo?msg=lost`
    // an exact transfer (opted out of batch-settlement): the proxy's payment row found by payer and nonce
    const err = await wrapFetch(fetch, { baseUrl: p.webUrl, agentKey: agent.key, batchSettlement: false })(url).catch(
      (e: unknown) => e,
    )
    if (!t.type(err, PaidCallFailedError, 'the paid call got no answer')) return
    const failed = err as PaidCallFailedError
    t.same(await exited, { code: null, signal: 'SIGKILL' }, 'the proxy died of SIGKILL as it began the answer')
    const { payer, nonce, agentPaymentId } = failed.payment
    t.match(nonce, /^0x[0-9a-f]{64}$/, 'the failed payment names its nonce')
    const row = await p.deps.db
      .selectFrom('payments')
      .select(['status'])
      .where('payer', '=', payer.toLowerCase())
      .where('nonce', '=', nonce!)
      .executeTakeFirstOrThrow()
    t.equal(row.status, 'served', 'the proxy had recorded it served: the buyer is charged')

    // another proxy of the platform answers the buyer, who knows only what it signed
    const res = await fetch(`${p.proxyUrl}/_tollgate/payments?payer=${payer}&nonce=${nonce}`)
    t.equal(res.status, 200)
    t.equal(res.headers.get('cache-control'), 'no-store', 'not final yet: not cached')
    const body = await res.json()
    t.match(body, {
      status: 'served',
      charged: true,
      message:
        /^served and charged: .*If you did not receive the answer, it was lost .*cannot be sent again .*new payment/,
      amount: '1000',
      transaction: null,
    })
    t.same(
      Object.keys(body).sort(),
      ['amount', 'charged', 'failureReason', 'message', 'network', 'status', 'transaction'],
      'nothing else: no id, resource or payee',
    )

    // the proxy back on its address: the client's look-up, from the error alone
    const again = await buildProxyApp(p.deps, { logger: false, handlersDir: fixtures })
    await again.listen({ host: '127.0.0.1', port })
    t.teardown(() => again.close())
    t.match(await lookupPayment(fetch, url, failed.payment), { status: 'served', charged: true, message: /lost/ })
    t.equal(await lookupPayment(fetch, url, { payer, nonce: `0x${'ab'.repeat(32)}` }), null, 'never recorded: null')
    await t.rejects(
      lookupPayment(fetch, p.webUrl + '/x', failed.payment),
      /has no Tollgate payment look-up \(HTTP 404/,
      'not a proxy: says so',
    )

    // the agent's side: the reported error proves nothing (the proxy served it), so the amount stays counted
    const mine = await p.web.inject({ method: 'GET', url: `/v1/agent/payments/${agentPaymentId}`, headers: agent.auth })
    t.match(mine.json(), {
      status: 'reserved',
      counted: true,
      counted_until: 'settlement or expiry',
      settlement: { status: 'served', charged: true, message: /served and charged/ },
    })
    t.match((await p.web.inject({ method: 'GET', url: '/v1/agent', headers: agent.auth })).json(), {
      spent: { daily: '1000' },
    })
    // and the CLI shows the same
    const out: Buffer[] = []
    const io: Io = {
      stdout: (c) => out.push(Buffer.from(c)),
      stderr: () => {},
      env: { TOLLGATE_API_URL: p.webUrl, TOLLGATE_AGENT_KEY: agent.key },
      home: '/nonexistent',
    }
    t.equal(await runCli(['payments', 'status', agentPaymentId!, '--json'], io), 0)
    t.match(JSON.parse(Buffer.concat(out).toString()), {
      settlement: { charged: true, message: /answer, it was lost/ },
    })

    t.test('bad look-ups are 400s that say what to send; an unknown payment is 404', async (t) => {
      const get = async (q: string) => {
        const r = await p.proxy.inject(`/_tollgate/payments${q}`)
        return { status: r.statusCode, body: r.json() }
      }
      const n = `0x${'11'.repeat(32)}`
      for (const [q, param, message] of [
        ['', 'payer', /missing: look a payment up by payer and nonce/],
        [`?nonce=${n}`, 'payer', /missing/],
        [`?payer=${payer}`, 'nonce', /missing/],
        [`?payer=0x12&nonce=${n}`, 'payer', /expected an address \(0x and 40 hex digits\)/],
        [`?payer=${payer}&nonce=0x12`, 'nonce', /expected a nonce \(0x and 64 hex digits\)/],
        [`?payer=${payer}&payer=${payer}&nonce=${n}`, 'payer', /expected an address/],
        ['/not-a-uuid', 'id', /expected a payment id \(UUID\), or look it up by payer and nonce/],
      ] as const) {
        const r = await get(q)
        t.equal(r.status, 400, q)
        t.match(r.body, { code: 'invalid_parameter', param, message }, q)
      }
      t.match(await get(`?payer=${payer}&nonce=${n}`), {
        status: 404,
        body: { code: 'not_found', message: 'payment with this payer and nonce not found' },
      })
      t.match(
        await get(
          `?payer=${payer.toUpperCase().replace('0X', '0x')}&nonce=${nonce!.toUpperCase().replace('0X', '0x')}`,
        ),
        { status: 200, body: { status: 'served' } },
        'hex digits in either case',
      )
    })
  },
)

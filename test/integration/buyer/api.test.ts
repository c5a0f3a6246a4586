import { randomBytes } from 'node:crypto'
import t from 'tap'
import { buildWebApp } from '../../../src/http/web-app.js'
import { startBuyerPlatform } from '../../helpers/buyer.js'

t.test('agent payment API: sign, pay through the proxy, outcome, status', async (t) => {
  const p = await startBuyerPlatform(t)
  const agent = await p.agent({ fund: 1_000_000n, caps: { daily: '5000' } })
  const url = `${p.proxyUrl}/tollgate/toolbox/echo?msg=hi`
  const challenge = await fetch(url)
  t.equal(challenge.status, 402)
  // the hosted endpoint offers batch-settlement beside exact: this is the exact flow (a transfer per
  // call, its settlement and release), so the v2 payments here opt out of batch-settlement
  const header = challenge.headers.get('payment-required')!

  // the agent's own budget, before any payment
  const status = async (app = p.web) => {
    const r = await app.inject({ method: 'GET', url: '/v1/agent', headers: agent.auth })
    t.equal(r.statusCode, 200, r.body)
    return r.json()
  }
  t.match(await status(), {
    object: 'agent_status',
    address: agent.address,
    spend_caps: { per_transaction: null, daily: '5000', monthly: null },
    spent: { daily: '0', monthly: '0' },
    headroom: { daily: '5000', monthly: null },
    balance: '1000000',
    unsettled: '0',
    available: '1000000',
    balance_error: null,
    allowlist: [],
  })

  const preview = await p.web.inject({
    method: 'POST',
    url: '/v1/agent/payments',
    headers: agent.auth,
    payload: { url, challenge: header, batch_settlement: false, dry_run: true },
  })
  t.equal(preview.statusCode, 200, preview.body)
  t.match(preview.json(), {
    object: 'agent_payment_preview',
    would_pay: { amount: '1000' },
    headroom: { daily: '4000', monthly: null },
    refusal: null,
  })
  t.equal(
    await p.deps.db.selectFrom('agent_payments').select('id').executeTakeFirst(),
    undefined,
    'a dry run records nothing',
  )

  const res = await p.web.inject({
    method: 'POST',
    url: '/v1/agent/payments',
    headers: agent.auth,
    payload: { url, challenge: header, batch_settlement: false },
  })
  t.equal(res.statusCode, 201, res.body)
  const pay = res.json()
  t.match(pay, { object: 'agent_payment', header: 'PAYMENT-SIGNATURE', amount: '1000', headroom: { daily: '4000' } })
  const paid = await fetch(url, { headers: { [pay.header]: pay.value } })
  t.equal(paid.status, 200, await paid.clone().text())
  const pr = JSON.parse(Buffer.from(paid.headers.get('payment-response')!, 'base64').toString())
  t.equal(pr.payer.toLowerCase(), agent.address.toLowerCase())
  const out = await p.web.inject({
    method: 'POST',
    url: `/v1/agent/payments/${pay.payment_id}/outcome`,
    headers: agent.auth,
    payload: { status: 'accepted', payment_response: pr },
  })
  t.equal(out.statusCode, 200, out.body)
  t.match(out.json(), { status: 'accepted', settlement: { payment_id: pr.paymentId } })
  const events = await p.deps.db
    .selectFrom('agent_payment_events')
    .select('type')
    .where('agent_payment_id', '=', pay.payment_id)
    .orderBy('id')
    .execute()
  t.same(
    events.map((e) => e.type),
    ['sending', 'accepted'],
  )

  // v1 body challenge gets an X-PAYMENT header
  const v1 = await (await fetch(url)).json()
  const res1 = await p.web.inject({
    method: 'POST',
    url: '/v1/agent/payments',
    headers: agent.auth,
    payload: { url, challenge: v1 },
  })
  t.equal(res1.statusCode, 201, res1.body)
  t.equal(res1.json().header, 'X-PAYMENT')
  const paid1 = await fetch(url, { headers: { 'x-payment': res1.json().value } })
  t.equal(paid1.status, 200)

  // rejection releases
  const res2 = await p.web.inject({
    method: 'POST',
    url: '/v1/agent/payments',
    headers: agent.auth,
    payload: { url, challenge: header, batch_settlement: false },
  })
  t.match(res2.json().headroom, { daily: '2000' })
  await p.web.inject({
    method: 'POST',
    url: `/v1/agent/payments/${res2.json().payment_id}/outcome`,
    headers: agent.auth,
    payload: { status: 'rejected' },
  })
  const res3 = await p.web.inject({
    method: 'POST',
    url: '/v1/agent/payments',
    headers: agent.auth,
    payload: { url, challenge: header, batch_settlement: false, dry_run: true },
  })
  t.match(res3.json().headroom, { daily: '2000' }, 'rejected amount released (3000 spent after this one)')
  const after = await status()
  t.match(
    after,
    { spent: { daily: '2000', monthly: '2000' }, headroom: { daily: '3000' }, balance: '1000000' },
    'two payments spent, the rejected one released',
  )
  t.equal(
    BigInt(after.available),
    BigInt(after.balance) - BigInt(after.unsettled),
    'available is the balance less what is signed and not settled',
  )
  // the chain down: the budget still answers, without a balance, and says why
  const { createPublicClient, http } = await import('viem')
  const blind = await buildWebApp(
    {
      ...p.deps,
      chain: createPublicClient({
        transport: http('http://127.0.0.1:9', { retryCount: 0, timeout: 2000 }),
      }) as typeof p.deps.chain,
    },
    { logger: false },
  )
  t.teardown(() => blind.close())
  t.match(await status(blind), {
    spent: { daily: '2000' },
    balance: null,
    available: null,
    balance_error: /chain RPC did not answer/,
  })
  t.equal((await p.web.inject({ method: 'GET', url: '/v1/agent' })).statusCode, 401, 'no agent key, no budget')

  t.equal(
    (
      await p.web.inject({
        method: 'POST',
        url: '/v1/agent/payments',
        payload: { url, challenge: header, batch_settlement: false },
      })
    ).statusCode,
    401,
  )
  t.equal(
    (
      await p.web.inject({
        method: 'POST',
        url: '/v1/agent/payments',
        headers: { authorization: 'Bearer ak_test_nope' },
        payload: { url, challenge: header, batch_settlement: false },
      })
    ).statusCode,
    401,
  )
  t.equal(
    (
      await p.web.inject({
        method: 'POST',
        url: '/v1/agent/payments',
        headers: { authorization: 'Bearer ak_test_nope' },
        payload: { url, challenge: header, batch_settlement: false },
      })
    ).json().code,
    'invalid_api_key',
  )

  // an agent key of the other deployment: 401 wrong_deployment_key, as for API keys (docs/api.md)
  t.equal(p.deps.config.deployment, 'sandbox')
  const live = await p.web.inject({
    method: 'POST',
    url: '/v1/agent/payments',
    headers: { authorization: `Bearer ${agent.key.replace(/^ak_test_/, 'ak_live_')}` },
    payload: { url, challenge: header, batch_settlement: false },
  })
  t.equal(live.statusCode, 401, live.body)
  t.match(live.json(), {
    code: 'wrong_deployment_key',
    message: 'this key belongs to the production deployment; this is sandbox',
  })
  t.match(live.headers['www-authenticate'], /invalid_token/)
  t.equal(
    (await p.web.inject({ method: 'GET', url: '/v1/agent', headers: { authorization: 'Bearer ak_live_x' } })).json()
      .code,
    'wrong_deployment_key',
    'on every /v1/agent route',
  )
  const production = await buildWebApp(
    { ...p.deps, config: { ...p.deps.config, deployment: 'production' } },
    { logger: false },
  )
  t.teardown(() => production.close())
  const test = await production.inject({
    method: 'POST',
    url: '/v1/agent/payments',
    headers: agent.auth,
    payload: { url, challenge: header, batch_settlement: false },
  })
  t.equal(test.statusCode, 401, test.body)
  t.match(test.json(), {
    code: 'wrong_deployment_key',
    message: 'this key belongs to the sandbox deployment; this is production',
  })
  t.equal(
    (await production.inject({ method: 'GET', url: '/v1/agent', headers: agent.auth })).statusCode,
    401,
    'a real, unrevoked sandbox key is refused by production',
  )
})

t.test('a wallet under a master key this process lacks: 503 that says so, not an internal error', async (t) => {
  const p = await startBuyerPlatform(t)
  const agent = await p.agent({ fund: 1_000_000n })
  // the same database, a web process started with another master key (a lost or changed key)
  const other = await buildWebApp(
    { ...p.deps, config: { ...p.deps.config, masterKey: randomBytes(32) } },
    { logger: false },
  )
  t.teardown(() => other.close())
  const url = `${p.proxyUrl}/tollgate/toolbox/echo?msg=hi`
  const header = (await fetch(url)).headers.get('payment-required')!
  const res = await other.inject({
    method: 'POST',
    url: '/v1/agent/payments',
    headers: agent.auth,
    payload: { url, challenge: header },
  })
  t.equal(res.statusCode, 503, res.body)
  t.match(res.json(), {
    code: 'service_unavailable',
    message: /encrypted under a master key this deployment is not configured with/,
  })
  const ok = await p.web.inject({
    method: 'POST',
    url: '/v1/agent/payments',
    headers: agent.auth,
    payload: { url, challenge: header },
  })
  t.equal(ok.statusCode, 201, 'the process with the right key still pays')
})

import t from 'tap'
import { loadConfig } from '../../../src/config.js'
import { ensureDemoAccount } from '../../../src/services/accounts/demo-account.js'
import { SIGNUPS_PER_HOUR } from '../../../src/http/routes/v1/signup.js'
import { accountsApp, userWithKey } from '../../helpers/accounts.js'

// What a new user ran into (issue 26, friction items 2, 5 and 9), one test each.

t.test('a loopback upstream refused outside development names the setting that allows it', async (t) => {
  const { deps, app } = await accountsApp(t)
  const { auth } = await userWithKey(deps)
  await app.inject({ method: 'POST', url: '/v1/sellers', headers: auth, payload: { namespace: 'friction-two' } })
  await app.inject({
    method: 'POST',
    url: '/v1/sellers/friction-two/services',
    headers: auth,
    payload: { name: 'svc', pay_to: '0x' + '22'.repeat(20) },
  })
  const res = await app.inject({
    method: 'POST',
    url: '/v1/sellers/friction-two/services/svc/endpoints',
    headers: auth,
    payload: { slug: 'ep1', price: '1', upstream_url: 'http://127.0.0.1:3000/x' },
  })
  t.equal(res.statusCode, 400)
  t.match(res.json(), {
    code: 'upstream_not_allowed',
    message: /127\.0\.0\.1 is a private, loopback or link-local host.*TOLLGATE_ALLOW_PRIVATE_UPSTREAMS=true/,
  })
})

t.test('a demo key revoked by a restart says so; other revoked or unknown keys do not', async (t) => {
  const { deps, app } = await accountsApp(t)
  const first = await ensureDemoAccount(deps)
  const second = await ensureDemoAccount(deps) // the next npm start
  const old = await app.inject({
    method: 'GET',
    url: '/v1/agents',
    headers: { authorization: `Bearer ${first.apiKey}` },
  })
  t.equal(old.statusCode, 401)
  t.match(old.json(), {
    code: 'invalid_api_key',
    message: /demo API key was revoked by a restart.*apiKey from \.tollgate\/dev\.json/,
  })
  t.equal(
    (await app.inject({ method: 'GET', url: '/v1/agents', headers: { authorization: `Bearer ${second.apiKey}` } }))
      .statusCode,
    200,
  )
  // an ordinary key revoked by its user, and a key never issued
  const u = await userWithKey(deps)
  const id = (await app.inject({ method: 'GET', url: '/v1/api-keys', headers: u.auth })).json().data[0].id
  await app.inject({ method: 'DELETE', url: `/v1/api-keys/${id}`, headers: u.auth })
  for (const key of [u.apiKey, 'sk_test_' + 'A'.repeat(43)]) {
    const res = await app.inject({ method: 'GET', url: '/v1/agents', headers: { authorization: `Bearer ${key}` } })
    t.match(res.json(), {
      statusCode: 401,
      code: 'invalid_api_key',
      message: 'the key is malformed, unknown or revoked',
    })
  }
})

t.test(
  'spend caps in USDC ("0.002") are refused with a message that names atomic units and the value to send',
  async (t) => {
    const { deps, app } = await accountsApp(t)
    const { auth } = await userWithKey(deps)
    const created = await app.inject({
      method: 'POST',
      url: '/v1/agents',
      headers: auth,
      payload: { name: 'bot', spend_caps: { daily: '0.002' } },
    })
    t.equal(created.statusCode, 400)
    t.match(created.json(), {
      param: 'spend_caps.daily',
      message: /atomic units.*"0\.002" looks like USDC: in atomic units \(6 decimals\) that is "2000"/,
    })
    t.notMatch(created.json().message, /must match pattern/)
    const agent = (
      await app.inject({ method: 'POST', url: '/v1/agents', headers: auth, payload: { name: 'bot' } })
    ).json()
    const put = await app.inject({
      method: 'PUT',
      url: `/v1/agents/${agent.address}/spend-caps`,
      headers: auth,
      payload: { monthly: '1.5' },
    })
    t.match(put.json(), { statusCode: 400, param: 'spend_caps.monthly', message: /"1500000"/ })
    const ok = await app.inject({
      method: 'PUT',
      url: `/v1/agents/${agent.address}/spend-caps`,
      headers: auth,
      payload: { daily: '2000', monthly: null },
    })
    t.match(ok.json(), { daily: '2000', monthly: null }, 'null still removes a cap')
    const cleared = await app.inject({
      method: 'PUT',
      url: `/v1/agents/${agent.address}/spend-caps`,
      headers: auth,
      payload: { daily: null },
    })
    t.match(cleared.json(), { daily: null })
  },
)

t.test(
  'sign-up on sandbox: an account and a session at once; rate limited per address; closed when configured',
  async (t) => {
    const { app } = await accountsApp(t)
    t.same((await app.inject({ method: 'GET', url: '/v1/signup' })).json(), {
      object: 'signup',
      open: true,
      min_password_length: 10,
      deployment: 'sandbox',
    })
    const res = await app.inject({
      method: 'POST',
      url: '/v1/signup',
      payload: { email: 'new@example.com', password: 'a long enough password' },
    })
    t.equal(res.statusCode, 201)
    t.match(res.json(), { object: 'session', user: { email: 'new@example.com' } })
    const cookie = res.cookies.find((c) => c.name === 'tollgate_session')!
    t.ok(cookie?.httpOnly, 'logged in with the dashboard cookie')
    const me = await app.inject({ method: 'GET', url: '/v1/session', cookies: { tollgate_session: cookie.value } })
    t.match(me.json(), { user: { email: 'new@example.com' }, via: 'session' })
    t.equal(
      (
        await app.inject({
          method: 'POST',
          url: '/v1/session',
          payload: { email: 'new@example.com', password: 'a long enough password' },
        })
      ).statusCode,
      200,
      'and can log in later',
    )
    t.match(
      (
        await app.inject({
          method: 'POST',
          url: '/v1/signup',
          payload: { email: 'NEW@example.com', password: 'a long enough password' },
        })
      ).json(),
      { statusCode: 409, message: 'a user with this email already exists' },
    )
    t.match(
      (
        await app.inject({
          method: 'POST',
          url: '/v1/signup',
          payload: { email: 'short@example.com', password: 'short' },
        })
      ).json(),
      { statusCode: 400, param: 'password' },
    )
    // two made it, three more refused bodies counted: the limit is per hour and address
    const codes: number[] = []
    for (let i = 0; i < 3; i++)
      codes.push(
        (
          await app.inject({
            method: 'POST',
            url: '/v1/signup',
            payload: { email: `more${i}@example.com`, password: 'a long enough password' },
          })
        ).statusCode,
      )
    t.same(codes, [201, 201, 429], `${SIGNUPS_PER_HOUR} attempts an hour from one address`)

    const closed = await accountsApp(t, { TOLLGATE_SIGNUP: 'closed' })
    t.same((await closed.app.inject({ method: 'GET', url: '/v1/signup' })).json().open, false)
    t.match(
      (
        await closed.app.inject({
          method: 'POST',
          url: '/v1/signup',
          payload: { email: 'x@example.com', password: 'a long enough password' },
        })
      ).json(),
      { statusCode: 403, code: 'signup_closed' },
    )
  },
)

t.test('TOLLGATE_SIGNUP: open on sandbox, closed on production unless opened', async (t) => {
  const production = {
    TOLLGATE_DEPLOYMENT: 'production',
    RPC_URL: 'https://rpc.example',
    RELAYER_PRIVATE_KEYS: '0x' + '11'.repeat(32),
    TOLLGATE_MASTER_KEY: '22'.repeat(32),
    TOLLGATE_RECEIVER_ADDRESS: '0x' + '33'.repeat(20),
  }
  t.equal(loadConfig({}).signup, true)
  t.equal(loadConfig(production).signup, false)
  t.equal(loadConfig({ ...production, TOLLGATE_SIGNUP: 'open' }).signup, true)
  t.throws(() => loadConfig({ TOLLGATE_SIGNUP: 'yes' }), /TOLLGATE_SIGNUP: expected one of open \| closed/)
})

import t from 'tap'
import { accountsApp, userWithKey } from '../../helpers/accounts.js'

// issue 22 part 3: the session cookie changes nothing for a page of another origin. These are the
// curl-shaped checks (headers as a browser or a program sends them); test/e2e/cross-origin.test.ts
// has a real page on another port.

const BASE = 'https://tollgate.example'
const DASHBOARD = 'https://dash.tollgate.example'

/** A web app whose dashboard is on its own host, a user logged in with curl (neither Origin nor Sec-Fetch-Site), an agent. */
async function loggedIn(t: { teardown(fn: () => unknown): void }) {
  const { deps, app } = await accountsApp(t, { BASE_URL: BASE, DASHBOARD_URL: `${DASHBOARD}/` })
  const u = await userWithKey(deps)
  const login = await app.inject({
    method: 'POST',
    url: '/v1/session',
    payload: { email: u.email, password: u.password },
  })
  if (login.statusCode !== 200) throw new Error(`login: ${login.body}`)
  const cookie = String(login.headers['set-cookie']).split(';')[0]!
  const agent = (
    await app.inject({ method: 'POST', url: '/v1/agents', headers: u.auth, payload: { name: 'bot' } })
  ).json() as { address: string }
  const keyCount = async () =>
    (await app.inject({ method: 'GET', url: `/v1/agents/${agent.address}/keys`, headers: u.auth })).json().data
      .length as number
  const createKey = (headers: Record<string, string>) =>
    app.inject({ method: 'POST', url: `/v1/agents/${agent.address}/keys`, headers: { cookie, ...headers } })
  return { app, u, cookie, agent, keyCount, createKey }
}

t.test(
  'a state-changing request on the session cookie from another origin: 403 cross_origin_request, nothing done',
  async (t) => {
    const { app, cookie, agent, keyCount, createKey } = await loggedIn(t)
    for (const [headers, from] of [
      [{ origin: 'https://evil.example' }, 'https://evil.example'],
      // the case: a same-site page (the proxy's host, a sibling subdomain) gets the SameSite=Lax cookie sent
      [
        { origin: 'https://proxy.tollgate.example', 'sec-fetch-site': 'same-site' },
        'https://proxy.tollgate.example (Sec-Fetch-Site: same-site)',
      ],
      [
        { origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' },
        'https://evil.example (Sec-Fetch-Site: cross-site)',
      ],
      [{ 'sec-fetch-site': 'cross-site' }, 'another origin (Sec-Fetch-Site: cross-site)'],
      [{ origin: 'null' }, 'an opaque origin (Origin: null)'],
      [{ origin: 'https://tollgate.example.evil.example' }, 'https://tollgate.example.evil.example'],
      [{ origin: 'http://tollgate.example' }, 'http://tollgate.example'],
      [{ origin: '<script>alert(1)</script>' }, 'another origin'],
    ] as const) {
      const before = await keyCount()
      const res = await createKey(headers)
      t.equal(res.statusCode, 403, JSON.stringify(headers))
      t.equal(res.json().code, 'cross_origin_request')
      t.equal(
        res.json().message,
        `this request comes from ${from}, not from the dashboard (${DASHBOARD}): a request that logs in or changes something with the dashboard session cookie is taken only from the dashboard itself; from a script or another site, send an API key (Authorization: Bearer sk_…) instead`,
      )
      t.notOk(res.headers['set-cookie'], 'the session is not touched')
      t.equal(await keyCount(), before, 'no key was made')
    }
    // every state-changing method, and the other route
    for (const [method, url, payload] of [
      ['POST', '/v1/funding-wallet/faucet', {}],
      ['POST', '/v1/api-keys', { name: 'x' }],
      ['PATCH', `/v1/agents/${agent.address}`, { name: 'renamed' }],
      ['PUT', `/v1/agents/${agent.address}/spend-caps`, { daily: '1' }],
      ['DELETE', '/v1/session', undefined],
    ] as const) {
      const res = await app.inject({ method, url, headers: { cookie, origin: 'https://evil.example' }, payload })
      t.equal(res.statusCode, 403, `${method} ${url}`)
      t.equal(res.json().code, 'cross_origin_request')
    }
    t.equal(
      (await app.inject({ method: 'GET', url: '/v1/session', headers: { cookie } })).statusCode,
      200,
      'the session was not logged out',
    )
    t.equal(
      (await app.inject({ method: 'GET', url: `/v1/agents/${agent.address}`, headers: { cookie } })).json().name,
      'bot',
      'nor the agent renamed',
    )
  },
)

t.test('what is let through: the dashboard, safe methods, programs, API keys', async (t) => {
  const { app, u, cookie, keyCount, createKey } = await loggedIn(t)
  let n = await keyCount()
  const allowed: Record<string, string>[] = [
    { origin: DASHBOARD },
    { origin: DASHBOARD, 'sec-fetch-site': 'same-site' }, // DASHBOARD_URL on its own host, calling BASE_URL
    { origin: BASE },
    { origin: BASE, 'sec-fetch-site': 'same-origin' },
    // behind a reverse proxy the browser's origin may be a name BASE_URL does not give: it says same-origin
    { origin: 'https://other-name.example', 'sec-fetch-site': 'same-origin' },
    { 'sec-fetch-site': 'same-origin' },
    { 'sec-fetch-site': 'none' },
    {}, // curl with the cookie: no browser sends a POST without Origin
  ]
  for (const headers of allowed) {
    const res = await createKey(headers)
    t.equal(res.statusCode, 201, JSON.stringify(headers))
    t.equal(await keyCount(), ++n)
  }
  // GET changes nothing: a page of another origin may send it (and cannot read the answer)
  t.equal(
    (
      await app.inject({
        method: 'GET',
        url: '/v1/agents',
        headers: { cookie, origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' },
      })
    ).statusCode,
    200,
  )
  t.equal(
    (await app.inject({ method: 'HEAD', url: '/v1/agents', headers: { cookie, origin: 'https://evil.example' } }))
      .statusCode,
    200,
  )
  // an API key is not sent by a browser on its own: a request with one is not the cookie's, even with the cookie beside it
  for (const headers of [u.auth, { ...u.auth, cookie }]) {
    const res = await app.inject({
      method: 'POST',
      url: '/v1/api-keys',
      headers: { ...headers, origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' },
      payload: { name: 'from a script' },
    })
    t.equal(res.statusCode, 201, Object.keys(headers).join('+'))
  }
  // no cookie at all: the usual 401, not 403
  t.equal(
    (
      await app.inject({
        method: 'POST',
        url: '/v1/api-keys',
        headers: { origin: 'https://evil.example' },
        payload: { name: 'x' },
      })
    ).json().code,
    'missing_api_key',
  )
  t.equal(
    (
      await app.inject({
        method: 'POST',
        url: '/v1/api-keys',
        headers: { cookie: 'tollgate_session=', origin: 'https://evil.example' },
        payload: { name: 'x' },
      })
    ).json().code,
    'missing_api_key',
    'an empty cookie is no cookie',
  )
  // the agent routes take no cookie
  t.equal(
    (
      await app.inject({
        method: 'POST',
        url: '/v1/agent/payments',
        headers: { cookie, origin: 'https://evil.example', authorization: 'Bearer ak_test_nope' },
        payload: {},
      })
    ).json().code,
    'invalid_api_key',
  )
})

t.test(
  'logging in from another origin is refused too (login CSRF); from the dashboard and curl it works',
  async (t) => {
    const { app, u } = await loggedIn(t)
    for (const headers of [
      { origin: 'https://evil.example' },
      { origin: 'https://proxy.tollgate.example', 'sec-fetch-site': 'same-site' },
    ]) {
      const res = await app.inject({
        method: 'POST',
        url: '/v1/session',
        headers,
        payload: { email: u.email, password: u.password },
      })
      t.equal(res.statusCode, 403)
      t.equal(res.json().code, 'cross_origin_request')
      t.notOk(res.headers['set-cookie'], 'no session cookie is set')
    }
    t.equal(
      (
        await app.inject({
          method: 'POST',
          url: '/v1/session',
          headers: { origin: DASHBOARD },
          payload: { email: u.email, password: u.password },
        })
      ).statusCode,
      200,
    )
    t.equal(
      (
        await app.inject({
          method: 'POST',
          url: '/v1/session',
          headers: { 'sec-fetch-site': 'same-origin' },
          payload: { email: u.email, password: u.password },
        })
      ).statusCode,
      200,
    )
  },
)

t.test('with the defaults (DASHBOARD_URL under BASE_URL) the origin is that of BASE_URL', async (t) => {
  const { deps, app } = await accountsApp(t, { BASE_URL: 'http://127.0.0.1:4999' })
  const u = await userWithKey(deps)
  const cookie = String(
    (await app.inject({ method: 'POST', url: '/v1/session', payload: { email: u.email, password: u.password } }))
      .headers['set-cookie'],
  ).split(';')[0]!
  const ok = await app.inject({
    method: 'POST',
    url: '/v1/api-keys',
    headers: { cookie, origin: 'http://127.0.0.1:4999' },
    payload: { name: 'a' },
  })
  t.equal(ok.statusCode, 201)
  const proxy = await app.inject({
    method: 'POST',
    url: '/v1/api-keys',
    headers: { cookie, origin: 'http://127.0.0.1:4998' },
    payload: { name: 'b' },
  })
  t.equal(proxy.statusCode, 403, 'another port of the same host is another origin')
  t.match(
    proxy.json().message,
    /comes from http:\/\/127\.0\.0\.1:4998, not from the dashboard \(http:\/\/127\.0\.0\.1:4999\)/,
  )
})

import t from 'tap'
import { accountsApp, userWithKey } from '../../helpers/accounts.js'

// issue 26: a key of the wrong kind says what it is and where it belongs, without echoing it
t.test(
  'an agent key on the user API, an API key on /v1/agent: 401 wrong_key_type naming where each belongs',
  async (t) => {
    const { deps, app } = await accountsApp(t)
    const u = await userWithKey(deps)
    const agent = (
      await app.inject({ method: 'POST', url: '/v1/agents', headers: u.auth, payload: { name: 'bot' } })
    ).json() as { address: string }
    const agentKey = (
      await app.inject({ method: 'POST', url: `/v1/agents/${agent.address}/keys`, headers: u.auth, payload: {} })
    ).json().secret as string
    t.match(agentKey, /^ak_test_/)
    t.equal(
      (await app.inject({ method: 'GET', url: '/v1/agent', headers: { authorization: `Bearer ${agentKey}` } }))
        .statusCode,
      200,
      'the agent key works where it belongs',
    )
    t.equal(
      (await app.inject({ method: 'GET', url: '/v1/agents', headers: u.auth })).statusCode,
      200,
      'and the API key where it belongs',
    )

    for (const [method, url] of [
      ['GET', '/v1/agents'],
      ['POST', '/v1/api-keys'],
      ['GET', '/v1/session'],
    ] as const) {
      const res = await app.inject({
        method,
        url,
        headers: { authorization: `Bearer ${agentKey}` },
        payload: method === 'POST' ? { name: 'x' } : undefined,
      })
      t.equal(res.statusCode, 401, `${method} ${url}`)
      t.match(res.json(), { code: 'wrong_key_type', key_type: 'agent_key' })
      t.equal(
        res.json().message,
        "this is an agent key (ak_test_…): it authenticates the agent routes /v1/agent/… (paying, the agent's budget, its own endpoints); the user API /v1/… takes an API key (sk_test_…) or the dashboard session",
      )
      t.match(res.headers['www-authenticate'], /invalid_token/)
      t.notOk(res.body.includes(agentKey.slice(8)), 'the key is not echoed')
    }

    for (const [method, url] of [
      ['GET', '/v1/agent'],
      ['POST', '/v1/agent/payments'],
      ['GET', '/v1/agent/sellers'],
    ] as const) {
      const res = await app.inject({
        method,
        url,
        headers: u.auth,
        payload: method === 'POST' ? { url: 'http://x', challenge: {} } : undefined,
      })
      t.equal(res.statusCode, 401, `${method} ${url}`)
      t.match(res.json(), { code: 'wrong_key_type', key_type: 'api_key' })
      t.equal(
        res.json().message,
        "this is an API key (sk_test_…): it authenticates the user API /v1/… (not /v1/agent); /v1/agent/… takes an agent key (ak_test_…): create one on the agent's dashboard page or with POST /v1/agents/{address}/keys",
      )
      t.notOk(res.body.includes(u.apiKey.slice(8)), 'the key is not echoed')
    }

    // a revoked or made-up key of the other kind is still named for its kind (only the prefix is read)
    const made = await app.inject({
      method: 'GET',
      url: '/v1/agents',
      headers: { authorization: `Bearer ak_test_${'a'.repeat(43)}` },
    })
    t.equal(made.json().code, 'wrong_key_type')
    // a key of the other deployment keeps its code, whichever kind and route
    for (const [url, bearer] of [
      ['/v1/agents', 'sk_live_x'],
      ['/v1/agents', 'ak_live_x'],
      ['/v1/agent', 'ak_live_x'],
      ['/v1/agent', 'sk_live_x'],
    ] as const) {
      const res = await app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${bearer}` } })
      t.match(
        res.json(),
        { code: 'wrong_deployment_key', message: 'this key belongs to the production deployment; this is sandbox' },
        `${bearer.slice(0, 8)} on ${url}`,
      )
    }
    // anything else is unchanged
    t.equal(
      (await app.inject({ method: 'GET', url: '/v1/agents', headers: { authorization: 'Bearer sk_test_nope' } })).json()
        .code,
      'invalid_api_key',
    )
    t.equal(
      (await app.inject({ method: 'GET', url: '/v1/agent', headers: { authorization: 'Bearer ak_test_nope' } })).json()
        .code,
      'invalid_api_key',
    )
  },
)

t.test('on production, the messages name the live prefixes', async (t) => {
  const { app } = await accountsApp(t, {
    TOLLGATE_DEPLOYMENT: 'production',
    RELAYER_PRIVATE_KEYS: '0x' + '11'.repeat(32),
    TOLLGATE_RECEIVER_ADDRESS: '0x' + '22'.repeat(20),
    RPC_URL: 'http://127.0.0.1:1',
  })
  const asUser = await app.inject({
    method: 'GET',
    url: '/v1/agents',
    headers: { authorization: `Bearer ak_live_${'a'.repeat(43)}` },
  })
  t.match(asUser.json(), {
    code: 'wrong_key_type',
    message: /^this is an agent key \(ak_live_…\): .* takes an API key \(sk_live_…\)/,
  })
  const asAgent = await app.inject({
    method: 'GET',
    url: '/v1/agent',
    headers: { authorization: `Bearer sk_live_${'a'.repeat(43)}` },
  })
  t.match(asAgent.json(), {
    code: 'wrong_key_type',
    message: /^this is an API key \(sk_live_…\): .* takes an agent key \(ak_live_…\)/,
  })
})

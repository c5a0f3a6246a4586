import t from 'tap'
import { accountsApp, userWithKey } from '../../helpers/accounts.js'

t.test(
  "another user's agent, keys and allowlist entries can be neither read nor changed, by address or by id",
  async (t) => {
    const { deps, app } = await accountsApp(t)
    const alice = await userWithKey(deps)
    const bob = await userWithKey(deps)
    const call = (
      method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
      url: string,
      auth: { authorization: string },
      payload?: Record<string, unknown>,
    ) => app.inject({ method, url, headers: auth, payload })

    const mine = (
      await call('POST', '/v1/agents', alice.auth, { name: 'alice bot', spend_caps: { daily: '1000' } })
    ).json() as { address: string }
    const theirs = (await call('POST', '/v1/agents', bob.auth, { name: 'bob bot' })).json() as { address: string }
    const key = (await call('POST', `/v1/agents/${mine.address}/keys`, alice.auth, { name: 'k' })).json() as {
      id: string
      secret: string
    }
    const entry = (
      await call('POST', `/v1/agents/${mine.address}/allowlist`, alice.auth, { kind: 'namespace', value: 'acme' })
    ).json() as { id: string }

    // Bob names Alice's agent
    const A = `/v1/agents/${mine.address}`
    for (const [method, url, payload] of [
      ['GET', `${A}/balance`],
      ['GET', `${A}/top-ups`],
      ['GET', `${A}/top-up`],
      ['PUT', `${A}/spend-caps`, { daily: null }],
      ['PUT', `${A}/top-up`, { enabled: true, threshold: '1', amount: '1000000' }],
      ['POST', `${A}/keys`, { name: 'stolen' }],
      ['DELETE', `${A}/keys/${key.id}`],
      ['POST', `${A}/allowlist`, { kind: 'namespace', value: 'evil' }],
      ['DELETE', `${A}/allowlist/${entry.id}`],
      ['PATCH', A, { name: 'renamed' }],
    ] as const) {
      const res = await call(method, url, bob.auth, payload)
      t.equal(res.statusCode, 404, `${method} ${url.replace(mine.address, "<alice's agent>")}`)
      t.equal(res.json().code, 'not_found')
    }
    // Bob names his own agent with Alice's key and entry ids
    t.equal(
      (await call('DELETE', `/v1/agents/${theirs.address}/keys/${key.id}`, bob.auth)).statusCode,
      404,
      "Alice's key id under Bob's agent",
    )
    t.equal(
      (await call('DELETE', `/v1/agents/${theirs.address}/allowlist/${entry.id}`, bob.auth)).statusCode,
      404,
      "Alice's allowlist entry id under Bob's agent",
    )
    // Bob revokes by id through his API-key route
    t.equal(
      (await call('DELETE', `/v1/api-keys/${key.id}`, bob.auth)).statusCode,
      404,
      'an agent key id is not an API key id',
    )

    // nothing of Alice's changed, and her agent key still works
    const after = (await call('GET', A, alice.auth)).json()
    t.match(after, { name: 'alice bot', spend_caps: { daily: '1000' }, top_up: { enabled: false } })
    t.match((await call('GET', `${A}/keys`, alice.auth)).json().data, [{ id: key.id, revoked_at: null }])
    t.same(
      (await call('GET', `${A}/allowlist`, alice.auth)).json().data.map((e: { id: string }) => e.id),
      [entry.id],
    )
    t.equal(
      (await app.inject({ method: 'GET', url: '/v1/agent', headers: { authorization: `Bearer ${key.secret}` } }))
        .statusCode,
      200,
    )

    // an agent key is not an API key: the user routes refuse it
    const asUser = await app.inject({
      method: 'GET',
      url: '/v1/agents',
      headers: { authorization: `Bearer ${key.secret}` },
    })
    t.equal(asUser.statusCode, 401)
    t.equal(asUser.json().code, 'wrong_key_type')
  },
)

import t from 'tap'
import { privateKeyToAccount } from 'viem/accounts'
import { custodialAccount } from '../../../src/services/wallets/custodial-wallet.js'
import { accountsApp, MASTER_KEY, userWithKey } from '../../helpers/accounts.js'

t.test('agents: create, list, get, patch, caps, top-up, 404s and validation per field', async (t) => {
  const { deps, app } = await accountsApp(t)
  const { auth } = await userWithKey(deps)
  const other = await userWithKey(deps)

  const created = await app.inject({
    method: 'POST',
    url: '/v1/agents',
    headers: auth,
    payload: { name: 'buyer one', spend_caps: { daily: '5000000' } },
  })
  t.equal(created.statusCode, 201)
  const agent = created.json()
  t.match(agent, {
    object: 'agent',
    name: 'buyer one',
    spend_caps: { per_transaction: null, daily: '5000000', monthly: null },
    top_up: { enabled: false, threshold: '0', amount: '0', funding_source: 'funding_wallet' },
  })
  t.match(agent.address, /^0x[0-9a-fA-F]{40}$/)
  const row = await deps.db
    .selectFrom('agents')
    .select(['address', 'encrypted_key'])
    .where('address', '=', agent.address)
    .executeTakeFirstOrThrow()
  t.notMatch(row.encrypted_key, /^0x/, 'the key is stored encrypted')
  t.equal(
    custodialAccount([Buffer.from(MASTER_KEY, 'hex')], 'agent', row.address, row.encrypted_key).address,
    agent.address,
    'and decrypts to the wallet',
  )

  const list = await app.inject({ method: 'GET', url: '/v1/agents', headers: auth })
  t.same(
    list.json().data.map((a: { address: string }) => a.address),
    [agent.address],
  )
  t.equal((await app.inject({ method: 'GET', url: '/v1/agents', headers: other.auth })).json().data.length, 0)
  const lower = await app.inject({ method: 'GET', url: `/v1/agents/${agent.address.toLowerCase()}`, headers: auth })
  t.equal(lower.statusCode, 200, 'addresses match case-insensitively')

  for (const url of [
    `/v1/agents/${agent.address}`,
    `/v1/agents/${agent.address}/keys`,
    `/v1/agents/${agent.address}/allowlist`,
    `/v1/agents/${agent.address}/spend-caps`,
  ]) {
    const res = await app.inject({ method: 'GET', url, headers: other.auth })
    t.equal(res.statusCode, 404, `another user's agent is not found: ${url}`)
    t.equal(res.json().code, 'not_found')
  }
  t.equal(
    (
      await app.inject({
        method: 'PATCH',
        url: `/v1/agents/${agent.address}`,
        headers: other.auth,
        payload: { name: 'x' },
      })
    ).statusCode,
    404,
  )
  t.equal(
    (await app.inject({ method: 'GET', url: '/v1/agents/0x' + '12'.repeat(20), headers: auth })).statusCode,
    404,
    'unknown agent',
  )
  t.equal((await app.inject({ method: 'GET', url: '/v1/agents/not-an-address', headers: auth })).statusCode, 404)

  const patched = await app.inject({
    method: 'PATCH',
    url: `/v1/agents/${agent.address}`,
    headers: auth,
    payload: {
      name: 'renamed',
      spend_caps: { per_transaction: '10000', daily: null },
      top_up: { enabled: true, threshold: '1000000', amount: '5000000' },
    },
  })
  t.equal(patched.statusCode, 200)
  t.match(patched.json(), {
    name: 'renamed',
    spend_caps: { per_transaction: '10000', daily: null, monthly: null },
    top_up: { enabled: true, threshold: '1000000', amount: '5000000' },
  })
  const caps = await app.inject({
    method: 'PUT',
    url: `/v1/agents/${agent.address}/spend-caps`,
    headers: auth,
    payload: { monthly: '90000000' },
  })
  t.match(caps.json(), { object: 'spend_caps', per_transaction: '10000', monthly: '90000000' })
  const topUp = await app.inject({
    method: 'PUT',
    url: `/v1/agents/${agent.address}/top-up`,
    headers: auth,
    payload: { enabled: false },
  })
  t.match(topUp.json(), { object: 'top_up', enabled: false, amount: '5000000' })
  const db = await deps.db
    .selectFrom('agents')
    .selectAll()
    .where('address', '=', agent.address)
    .executeTakeFirstOrThrow()
  t.match(db, {
    cap_per_transaction: '10000',
    cap_daily: null,
    cap_monthly: '90000000',
    top_up_enabled: false,
    top_up_threshold: '1000000',
    top_up_amount: '5000000',
  })

  const bad: Array<[string, string, Record<string, unknown>, string]> = [
    ['POST', '/v1/agents', {}, 'name'],
    ['POST', '/v1/agents', { name: '' }, 'name'],
    ['POST', '/v1/agents', { name: 'a', spend_caps: { daily: '-1' } }, 'spend_caps.daily'],
    ['POST', '/v1/agents', { name: 'a', spend_caps: { daily: '1.5' } }, 'spend_caps.daily'],
    ['PATCH', `/v1/agents/${agent.address}`, { spend_caps: { per_transaction: 'ten' } }, 'spend_caps.per_transaction'],
    ['PUT', `/v1/agents/${agent.address}/spend-caps`, { monthly: '1e6' }, 'monthly'],
    ['PATCH', `/v1/agents/${agent.address}`, { top_up: { threshold: '-5' } }, 'top_up.threshold'],
    ['PATCH', `/v1/agents/${agent.address}`, { top_up: { enabled: true, amount: '0' } }, 'top_up.amount'],
    ['PATCH', `/v1/agents/${agent.address}`, { top_up: { enabled: 'yes' } }, 'top_up.enabled'],
    ['PATCH', `/v1/agents/${agent.address}`, { top_up: { funding_source: 'card' } }, 'top_up.funding_source'],
  ]
  for (const [method, url, payload, param] of bad) {
    const res = await app.inject({ method: method as 'POST', url, headers: auth, payload })
    t.equal(res.statusCode, 400, `${method} ${JSON.stringify(payload)} → 400`)
    t.equal(res.json().code, 'invalid_parameter')
    t.ok(String(res.json().param).endsWith(param), `names ${param} (got ${res.json().param})`)
  }
})

t.test('agent keys: secret once, hashed, list, revoke; 404 across users', async (t) => {
  const { deps, app } = await accountsApp(t)
  const { auth } = await userWithKey(deps)
  const other = await userWithKey(deps)
  const agent = (await app.inject({ method: 'POST', url: '/v1/agents', headers: auth, payload: { name: 'a' } })).json()
  const k = await app.inject({
    method: 'POST',
    url: `/v1/agents/${agent.address}/keys`,
    headers: auth,
    payload: { name: 'runtime' },
  })
  t.equal(k.statusCode, 201)
  t.match(k.json(), { object: 'agent_key', agent: agent.address, name: 'runtime', revoked_at: null })
  t.match(k.json().secret, /^ak_test_[0-9A-Za-z]{43}$/)
  const listed = await app.inject({ method: 'GET', url: `/v1/agents/${agent.address}/keys`, headers: auth })
  t.equal(listed.json().data.length, 1)
  t.notOk(listed.body.includes(k.json().secret))
  t.equal(
    (await app.inject({ method: 'POST', url: `/v1/agents/${agent.address}/keys`, headers: other.auth, payload: {} }))
      .statusCode,
    404,
  )
  t.equal(
    (
      await app.inject({
        method: 'DELETE',
        url: `/v1/agents/${agent.address}/keys/${k.json().id}`,
        headers: other.auth,
      })
    ).statusCode,
    404,
  )
  const r = await app.inject({
    method: 'DELETE',
    url: `/v1/agents/${agent.address}/keys/${k.json().id}`,
    headers: auth,
  })
  t.equal(r.statusCode, 200)
  t.ok(r.json().revoked_at)
  t.equal(
    (
      await app.inject({ method: 'GET', url: '/v1/agents', headers: { authorization: `Bearer ${k.json().secret}` } })
    ).json().code,
    'wrong_key_type',
    'an agent key is not an API key',
  )
})

t.test('allowlist: add (normalised, no duplicates), list, remove, validation', async (t) => {
  const { deps, app } = await accountsApp(t)
  const { auth } = await userWithKey(deps)
  const other = await userWithKey(deps)
  const agent = (await app.inject({ method: 'POST', url: '/v1/agents', headers: auth, payload: { name: 'a' } })).json()
  const url = `/v1/agents/${agent.address}/allowlist`
  const payTo = privateKeyToAccount(('0x' + '33'.repeat(32)) as `0x${string}`).address
  const e1 = await app.inject({ method: 'POST', url, headers: auth, payload: { kind: 'pay_to', value: payTo } })
  t.equal(e1.statusCode, 201)
  t.match(e1.json(), { object: 'allowlist_entry', kind: 'pay_to', value: payTo.toLowerCase() })
  const dup = await app.inject({
    method: 'POST',
    url,
    headers: auth,
    payload: { kind: 'pay_to', value: payTo.toLowerCase() },
  })
  t.equal(dup.json().id, e1.json().id, 'adding again returns the same entry')
  t.equal(
    (await app.inject({ method: 'POST', url, headers: auth, payload: { kind: 'namespace', value: 'acme-data' } }))
      .statusCode,
    201,
  )
  t.equal(
    (
      await app.inject({ method: 'POST', url, headers: auth, payload: { kind: 'host', value: 'API.Example.com' } })
    ).json().value,
    'api.example.com',
  )
  const list = await app.inject({ method: 'GET', url, headers: auth })
  t.same(
    list.json().data.map((e: { kind: string }) => e.kind),
    ['pay_to', 'namespace', 'host'],
  )
  for (const [payload, param] of [
    [{ kind: 'pay_to', value: '0x123' }, 'value'],
    [{ kind: 'namespace', value: 'Bad Name!' }, 'value'],
    [{ kind: 'host', value: 'http://x' }, 'value'],
    [{ kind: 'email', value: 'x' }, 'kind'],
  ] as const) {
    const res = await app.inject({ method: 'POST', url, headers: auth, payload })
    t.equal(res.statusCode, 400, JSON.stringify(payload))
    t.equal(res.json().param, param)
    if (param === 'kind')
      t.match(res.json().message, 'expected one of pay_to, namespace, host', 'an enum error names the allowed values')
  }
  t.equal((await app.inject({ method: 'DELETE', url: `${url}/${e1.json().id}`, headers: other.auth })).statusCode, 404)
  t.equal((await app.inject({ method: 'DELETE', url: `${url}/${e1.json().id}`, headers: auth })).statusCode, 204)
  t.equal((await app.inject({ method: 'DELETE', url: `${url}/${e1.json().id}`, headers: auth })).statusCode, 404)
  t.equal((await app.inject({ method: 'GET', url, headers: auth })).json().data.length, 2)
})

t.test('Idempotency-Key: replay, conflict, per user', async (t) => {
  const { deps, app } = await accountsApp(t)
  const { auth } = await userWithKey(deps)
  const other = await userWithKey(deps)
  const first = await app.inject({
    method: 'POST',
    url: '/v1/agents',
    headers: { ...auth, 'idempotency-key': 'k1' },
    payload: { name: 'once' },
  })
  const again = await app.inject({
    method: 'POST',
    url: '/v1/agents',
    headers: { ...auth, 'idempotency-key': 'k1' },
    payload: { name: 'once' },
  })
  t.equal(again.statusCode, 201)
  t.equal(again.body, first.body, 'same answer')
  t.equal(again.headers['idempotent-replayed'], 'true')
  t.equal((await app.inject({ method: 'GET', url: '/v1/agents', headers: auth })).json().data.length, 1, 'created once')
  const changed = await app.inject({
    method: 'POST',
    url: '/v1/agents',
    headers: { ...auth, 'idempotency-key': 'k1' },
    payload: { name: 'twice' },
  })
  t.equal(changed.statusCode, 409)
  t.equal(changed.json().code, 'idempotency_key_reused')
  const otherUser = await app.inject({
    method: 'POST',
    url: '/v1/agents',
    headers: { ...other.auth, 'idempotency-key': 'k1' },
    payload: { name: 'once' },
  })
  t.equal(otherUser.statusCode, 201)
  t.not(otherUser.json().address, first.json().address, 'keys are per user')
  const failed = await app.inject({
    method: 'POST',
    url: '/v1/agents',
    headers: { ...auth, 'idempotency-key': 'k2' },
    payload: { name: '' },
  })
  t.equal(failed.statusCode, 400)
  t.equal(
    (
      await app.inject({
        method: 'POST',
        url: '/v1/agents',
        headers: { ...auth, 'idempotency-key': 'k2' },
        payload: { name: 'fixed' },
      })
    ).statusCode,
    201,
    'a failed attempt is not stored: the key can be retried',
  )
  const k = await app.inject({
    method: 'POST',
    url: '/v1/api-keys',
    headers: { ...auth, 'idempotency-key': 'key-1' },
    payload: { name: 'n' },
  })
  const k2 = await app.inject({
    method: 'POST',
    url: '/v1/api-keys',
    headers: { ...auth, 'idempotency-key': 'key-1' },
    payload: { name: 'n' },
  })
  t.equal(k2.json().id, k.json().id, 'API key creation replays (the stored answer is encrypted)')
  const stored = await deps.redis.keys(deps.key('idempotency', '*'))
  for (const s of stored) t.notOk(String(await deps.redis.get(s)).includes(k.json().secret), 'no secret in Redis')
})

t.test('rate limit per key, shared, with RateLimit headers', async (t) => {
  const { deps, app } = await accountsApp(t, {}, { v1: { rateLimitPerMinute: 3 } })
  const { auth } = await userWithKey(deps)
  const other = await userWithKey(deps)
  const res = []
  for (let i = 0; i < 4; i++) res.push(await app.inject({ method: 'GET', url: '/v1/agents', headers: auth }))
  t.same(
    res.map((r) => r.statusCode),
    [200, 200, 200, 429],
  )
  t.equal(res[0]!.headers['ratelimit-limit'], '3')
  t.equal(res[0]!.headers['ratelimit-remaining'], '2')
  t.ok(Number(res[0]!.headers['ratelimit-reset']) > 0)
  t.equal(res[3]!.json().code, 'rate_limited')
  t.ok(res[3]!.headers['retry-after'])
  t.equal(
    (await app.inject({ method: 'GET', url: '/v1/agents', headers: other.auth })).statusCode,
    200,
    'another key has its own budget',
  )
})

t.test('balances and funding wallet answer 503 without a chain; faucet refused off the dev chain', async (t) => {
  const { deps, app } = await accountsApp(t)
  const { auth } = await userWithKey(deps)
  const agent = (await app.inject({ method: 'POST', url: '/v1/agents', headers: auth, payload: { name: 'a' } })).json()
  const bal = await app.inject({ method: 'GET', url: `/v1/agents/${agent.address}/balance`, headers: auth })
  t.equal(bal.statusCode, 503)
  const fw = await app.inject({ method: 'GET', url: '/v1/funding-wallet', headers: auth })
  t.equal(fw.statusCode, 200)
  t.match(fw.json(), {
    object: 'funding_wallet',
    balance: null,
    balance_error: /chain RPC did not answer/,
    faucet_available: false,
  })
  t.equal(
    (await app.inject({ method: 'GET', url: '/v1/funding-wallet', headers: auth })).json().address,
    fw.json().address,
    'one funding wallet per user',
  )
  const faucet = await app.inject({ method: 'POST', url: '/v1/funding-wallet/faucet', headers: auth, payload: {} })
  t.equal(faucet.statusCode, 403)
  t.equal(faucet.json().code, 'faucet_unavailable')
})

t.test(
  'Idempotency-Key replayed after a master key rotation: a clear 409, not a 500, and nothing created twice',
  async (t) => {
    const { deps, app } = await accountsApp(t)
    const { auth } = await userWithKey(deps)
    const first = await app.inject({
      method: 'POST',
      url: '/v1/agents',
      headers: { ...auth, 'idempotency-key': 'rot-1' },
      payload: { name: 'once' },
    })
    t.equal(first.statusCode, 201)
    // a process on the new key, same database and Redis
    const { app: rotated } = await accountsApp(t, {
      TOLLGATE_MASTER_KEY: '77'.repeat(32),
      DATABASE_SCHEMA: deps.config.databaseSchema,
      REDIS_PREFIX: deps.config.redisPrefix,
    })
    const replay = await rotated.inject({
      method: 'POST',
      url: '/v1/agents',
      headers: { ...auth, 'idempotency-key': 'rot-1' },
      payload: { name: 'once' },
    })
    t.equal(replay.statusCode, 409)
    t.equal(replay.json().code, 'idempotency_answer_unreadable')
    t.equal(
      (await rotated.inject({ method: 'GET', url: '/v1/agents', headers: auth })).json().data.length,
      1,
      'still created once',
    )
  },
)

import { createServer, type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { InjectOptions } from 'fastify'
import t from 'tap'
import { custodialAccount } from '../../../src/services/wallets/custodial-wallet.js'
import { decryptSecret } from '../../../src/secrets/wallet-crypto.js'
import { accountsApp, MASTER_KEY, userWithKey } from '../../helpers/accounts.js'

// Issue 7: no secret (API key, agent key, wallet private key, upstream header value, signing
// secret, session cookie, password, master key) may appear in any log line the web app writes.
// Every line is captured from pino's destination stream at the most verbose level.

t.test('log scan: a full account flow at trace level writes no secret', async (t) => {
  const lines: string[] = []
  const stream = { write: (s: string) => void lines.push(s) }
  const { deps, app } = await accountsApp(
    t,
    { TOLLGATE_ALLOW_PRIVATE_UPSTREAMS: 'true', LOG_LEVEL: 'trace' },
    { logger: true, logStream: stream },
  )
  const upstreamSeen: IncomingHttpHeaders[] = []
  const upstream = createServer((q, r) => {
    upstreamSeen.push(q.headers)
    r.end('ok')
  })
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r))
  t.teardown(() => new Promise((r) => upstream.close(r)))

  const u = await userWithKey(deps)
  const secrets: Record<string, string> = { apiKey: u.apiKey, password: u.password, masterKey: MASTER_KEY }
  const H = u.auth
  const statuses: Record<string, number> = {}
  const call = async (label: string, opts: InjectOptions) => {
    const res = await app.inject(opts)
    statuses[label] = res.statusCode
    return res
  }

  // API keys: create (with an idempotency key, then replayed), list, revoke
  const k2 = await call('create api key', {
    method: 'POST',
    url: '/v1/api-keys',
    headers: { ...H, 'idempotency-key': 'log-scan-1' },
    payload: { name: 'k2' },
  })
  secrets.apiKey2 = k2.json().secret
  await call('replayed api key', {
    method: 'POST',
    url: '/v1/api-keys',
    headers: { ...H, 'idempotency-key': 'log-scan-1' },
    payload: { name: 'k2' },
  })
  await call('list api keys', {
    method: 'GET',
    url: '/v1/api-keys',
    headers: { authorization: `Bearer ${secrets.apiKey2}` },
  })
  await call('revoke api key', { method: 'DELETE', url: `/v1/api-keys/${k2.json().id}`, headers: H })

  // an agent, its key, its allowlist, caps and top-up settings
  const agent = (
    await call('create agent', {
      method: 'POST',
      url: '/v1/agents',
      headers: H,
      payload: { name: 'scan', spend_caps: { daily: '1000000' } },
    })
  ).json()
  const ak = await call('create agent key', {
    method: 'POST',
    url: `/v1/agents/${agent.address}/keys`,
    headers: H,
    payload: { name: 'k' },
  })
  secrets.agentKey = ak.json().secret
  const ak2 = await call('create second agent key', {
    method: 'POST',
    url: `/v1/agents/${agent.address}/keys`,
    headers: H,
    payload: { name: 'k2' },
  })
  secrets.agentKey2 = ak2.json().secret
  await call('revoke agent key', {
    method: 'DELETE',
    url: `/v1/agents/${agent.address}/keys/${ak2.json().id}`,
    headers: H,
  })
  await call('allowlist', {
    method: 'POST',
    url: `/v1/agents/${agent.address}/allowlist`,
    headers: H,
    payload: { kind: 'host', value: 'api.example.com' },
  })
  await call('top-up settings', {
    method: 'PUT',
    url: `/v1/agents/${agent.address}/top-up`,
    headers: H,
    payload: { enabled: true, threshold: '5', amount: '10' },
  })
  await call('funding wallet', { method: 'GET', url: '/v1/funding-wallet', headers: H })

  // seller publishing with a forwarded upstream header, and the test action that forwards it
  await call('claim namespace', { method: 'POST', url: '/v1/sellers', headers: H, payload: { namespace: 'log-scan' } })
  await call('create service', {
    method: 'POST',
    url: '/v1/sellers/log-scan/services',
    headers: H,
    payload: { name: 'svc', pay_to: agent.address },
  })
  secrets.upstreamHeader = 'UPSTREAM-HEADER-VALUE-log-scan-0123456789'
  const ep = await call('publish endpoint', {
    method: 'POST',
    url: '/v1/sellers/log-scan/services/svc/endpoints',
    headers: H,
    payload: {
      slug: 'ep-one',
      price: '5',
      upstream_url: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/`,
      upstream: { forward_headers: { 'x-upstream-key': secrets.upstreamHeader } },
    },
  })
  secrets.signingSecret = ep.json().signing_secret
  await call('test endpoint', {
    method: 'POST',
    url: '/v1/sellers/log-scan/services/svc/endpoints/ep-one/test',
    headers: H,
    payload: {},
  })
  t.equal(
    upstreamSeen.at(-1)?.['x-upstream-key'],
    secrets.upstreamHeader,
    'the upstream got the header (so the value went through the app)',
  )
  secrets.upstreamHeader2 = 'UPSTREAM-HEADER-VALUE-rotated-9876543210'
  await call('update endpoint header', {
    method: 'PATCH',
    url: '/v1/sellers/log-scan/services/svc/endpoints/ep-one',
    headers: H,
    payload: { upstream: { forward_headers: { 'x-upstream-key': secrets.upstreamHeader2 } } },
  })

  // the dashboard session
  const login = await call('login', {
    method: 'POST',
    url: '/v1/session',
    payload: { email: u.email, password: u.password },
  })
  secrets.sessionCookie = String(login.headers['set-cookie']).split(';')[0]!.split('=')[1]!
  await call('session read', {
    method: 'GET',
    url: '/v1/session',
    headers: { cookie: `tollgate_session=${secrets.sessionCookie}` },
  })
  await call('agents via session', {
    method: 'GET',
    url: '/v1/agents',
    headers: { cookie: `tollgate_session=${secrets.sessionCookie}` },
  })

  // failed authentication
  secrets.wrongPassword = 'wrong horse battery staple'
  await call('wrong password', {
    method: 'POST',
    url: '/v1/session',
    payload: { email: u.email, password: secrets.wrongPassword },
  })
  secrets.unknownKey = u.apiKey.slice(0, -6) + 'ZZZZZZ'
  await call('unknown api key', {
    method: 'GET',
    url: '/v1/agents',
    headers: { authorization: `Bearer ${secrets.unknownKey}` },
  })
  await call('revoked api key', {
    method: 'GET',
    url: '/v1/agents',
    headers: { authorization: `Bearer ${secrets.apiKey2}` },
  })
  secrets.otherDeploymentKey = u.apiKey.replace(/^sk_test_/, 'sk_live_')
  await call('other deployment key', {
    method: 'GET',
    url: '/v1/agents',
    headers: { authorization: `Bearer ${secrets.otherDeploymentKey}` },
  })
  await call('malformed key', { method: 'GET', url: '/v1/agents', headers: { authorization: `Bearer ${u.apiKey}!` } })
  await call('agent key on the user API', {
    method: 'GET',
    url: '/v1/agents',
    headers: { authorization: `Bearer ${secrets.agentKey}` },
  })
  await call('api key on the agent API', { method: 'POST', url: '/v1/agent/payments', headers: H, payload: {} })
  await call('revoked agent key', {
    method: 'POST',
    url: '/v1/agent/payments',
    headers: { authorization: `Bearer ${secrets.agentKey2}` },
    payload: {},
  })
  await call('forged session', {
    method: 'GET',
    url: '/v1/agents',
    headers: { cookie: `tollgate_session=${secrets.sessionCookie.slice(0, -4)}AAAA` },
  })

  // error paths: a body that is not JSON and carries a secret, a validation error, the chain down (503)
  await call('broken json', {
    method: 'POST',
    url: '/v1/session',
    headers: { 'content-type': 'application/json' },
    payload: `{"email":"${u.email}","password":"${u.password}"`,
  })
  await call('bad api key body', {
    method: 'POST',
    url: '/v1/api-keys',
    headers: H,
    payload: { name: secrets.agentKey, extra: 1, nested: { secret: secrets.agentKey } },
  })
  await call('balance without chain', { method: 'GET', url: `/v1/agents/${agent.address}/balance`, headers: H })
  await call('logout', {
    method: 'DELETE',
    url: '/v1/session',
    headers: { cookie: `tollgate_session=${secrets.sessionCookie}` },
  })

  t.match(
    statuses,
    {
      'create api key': 201,
      'replayed api key': 201,
      'revoke api key': 200,
      'create agent': 201,
      'create agent key': 201,
      'publish endpoint': 201,
      'test endpoint': 200,
      'update endpoint header': 200,
      login: 200,
      'session read': 200,
      'wrong password': 401,
      'unknown api key': 401,
      'revoked api key': 401,
      'other deployment key': 401,
      'malformed key': 401,
      'agent key on the user API': 401,
      'api key on the agent API': 401,
      'revoked agent key': 401,
      'forged session': 401,
      'broken json': 400,
      'balance without chain': 503,
    },
    'the flow went through every path it meant to',
  )

  // the wallet private keys, decrypted here only to search for them
  const keys = [Buffer.from(MASTER_KEY, 'hex')]
  for (const [table, kind] of [
    ['agents', 'agent'],
    ['funding_wallets', 'funding'],
  ] as const) {
    for (const w of await deps.db.selectFrom(table).select(['address', 'encrypted_key']).execute()) {
      const pk = decryptSecret(keys, w.encrypted_key, `${kind}-wallet:${w.address.toLowerCase()}`)
      t.equal(custodialAccount(keys, kind, w.address, w.encrypted_key).address, w.address)
      secrets[`${kind}WalletKey:${w.address}`] = pk
      secrets[`${kind}WalletKeyNo0x:${w.address}`] = pk.slice(2)
    }
  }
  t.ok(
    Object.values(secrets).every((s) => typeof s === 'string' && s.length >= 16),
    `${Object.keys(secrets).length} secrets to look for`,
  )

  // the capture works: one completed request per call, at least
  const parsed = lines.map((l) => JSON.parse(l) as { msg?: string; level: number })
  t.ok(
    parsed.filter((l) => l.msg === 'request completed').length >= Object.keys(statuses).length,
    `${lines.length} log lines captured`,
  )
  t.ok(
    parsed.some((l) => l.msg === 'request failed'),
    'the 503 path logged its warning',
  )
  for (const [name, s] of Object.entries(secrets)) t.same(leaks(lines, { [name]: s }), [], `no log line holds ${name}`)

  // the scan itself sees a leak: a secret logged through the app's own logger is caught
  const n = lines.length
  app.log.info({ note: `agent key ${secrets.agentKey}` }, 'a careless line')
  app.log.info({ req: { headers: { authorization: `Bearer ${secrets.apiKey}` } } }, 'a redacted line')
  t.same(
    leaks(lines.slice(n), secrets),
    ['agentKey'],
    'the scan catches a logged secret; the authorization header path is redacted',
  )
})

/** Names of the secrets that appear in `lines`, as given or base64 / URL encoded. */
function leaks(lines: string[], secrets: Record<string, string>): string[] {
  const all = lines.join('\n')
  return Object.entries(secrets)
    .filter(
      ([, s]) =>
        all.includes(s) || all.includes(Buffer.from(s).toString('base64')) || all.includes(encodeURIComponent(s)),
    )
    .map(([name]) => name)
}

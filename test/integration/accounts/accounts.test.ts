import t from 'tap'
import { buildWebApp } from '../../../src/http/web-app.js'
import { createDeps } from '../../../src/deps.js'
import { randomUUID } from 'node:crypto'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { ensureDemoAccount, ensureDemoPayerAgent } from '../../../src/services/accounts/demo-account.js'
import { custodialAccount } from '../../../src/services/wallets/custodial-wallet.js'
import { createUserCli } from '../../../src/cli/commands/users.js'
import { accountsApp, userWithKey } from '../../helpers/accounts.js'

t.test('missing, malformed and unknown keys', async (t) => {
  const { app } = await accountsApp(t)
  const missing = await app.inject({ method: 'GET', url: '/v1/agents' })
  t.equal(missing.statusCode, 401)
  t.equal(missing.json().code, 'missing_api_key')
  t.equal(missing.headers['www-authenticate'], 'Bearer')

  for (const bad of [
    'Bearer',
    'Bearer sk_test_short',
    'Basic abc',
    'Bearer sk_test_' + 'x'.repeat(42) + '!',
    'Bearer ' + 'sk_test_' + '0'.repeat(43),
  ]) {
    const res = await app.inject({ method: 'GET', url: '/v1/agents', headers: { authorization: bad } })
    t.equal(res.statusCode, 401, bad)
    t.equal(res.json().code, 'invalid_api_key', bad)
    t.notOk(JSON.stringify(res.json()).includes(bad.slice(7)) && bad.length > 20, 'the key is not echoed')
  }
})

t.test('deployment binding both ways', async (t) => {
  const sandbox = await accountsApp(t)
  const sk = await userWithKey(sandbox.deps)
  t.match(sk.apiKey, /^sk_test_[0-9A-Za-z]{43}$/)
  const production = await accountsApp(t, {
    TOLLGATE_DEPLOYMENT: 'production',
    RELAYER_PRIVATE_KEYS: '0x' + '11'.repeat(32),
    TOLLGATE_RECEIVER_ADDRESS: '0x' + '22'.repeat(20),
    RPC_URL: 'http://127.0.0.1:1',
  })
  const pk = await userWithKey(production.deps)
  t.match(pk.apiKey, /^sk_live_[0-9A-Za-z]{43}$/)

  const a = await production.app.inject({ method: 'GET', url: '/v1/agents', headers: sk.auth })
  t.equal(a.statusCode, 401)
  t.equal(a.json().code, 'wrong_deployment_key')
  t.match(a.json().message, /belongs to the sandbox deployment; this is production/)
  const b = await sandbox.app.inject({ method: 'GET', url: '/v1/agents', headers: pk.auth })
  t.equal(b.statusCode, 401)
  t.equal(b.json().code, 'wrong_deployment_key')
  t.match(b.json().message, /belongs to the production deployment; this is sandbox/)
  t.equal((await sandbox.app.inject({ method: 'GET', url: '/v1/agents', headers: sk.auth })).statusCode, 200)
})

t.test('key lifecycle: shown once, works, revoke is immediate on two instances', async (t) => {
  const { deps, app } = await accountsApp(t)
  const second = createDeps(deps.config)
  t.teardown(() => second.close())
  const app2 = await buildWebApp(second, { logger: false })
  t.teardown(() => app2.close())
  const { auth } = await userWithKey(deps)

  const created = await app.inject({ method: 'POST', url: '/v1/api-keys', headers: auth, payload: { name: 'ci' } })
  t.equal(created.statusCode, 201)
  const key = created.json()
  t.match(key, { object: 'api_key', name: 'ci', revoked_at: null, last_used_at: null })
  t.match(key.secret, /^sk_test_/)
  t.equal(key.prefix, key.secret.slice(0, 12))
  t.equal(key.last4, key.secret.slice(-4))
  const own = { authorization: `Bearer ${key.secret}` }

  for (const a of [app, app2])
    t.equal(
      (await a.inject({ method: 'GET', url: '/v1/agents', headers: own })).statusCode,
      200,
      'works on both instances',
    )
  const listed = await app2.inject({ method: 'GET', url: '/v1/api-keys', headers: own })
  t.equal(listed.json().data.length, 2)
  t.notOk(listed.body.includes(key.secret), 'the list never shows a secret')
  t.notOk(listed.json().data.some((k: Record<string, unknown>) => 'secret' in k))
  await new Promise((r) => setTimeout(r, 50))
  const used = (await app.inject({ method: 'GET', url: '/v1/api-keys', headers: auth }))
    .json()
    .data.find((k: { id: string }) => k.id === key.id)
  t.ok(used.last_used_at, 'last_used_at is recorded')

  const revoked = await app.inject({ method: 'DELETE', url: `/v1/api-keys/${key.id}`, headers: auth })
  t.equal(revoked.statusCode, 200)
  t.ok(revoked.json().revoked_at)
  for (const a of [app, app2]) {
    const res = await a.inject({ method: 'GET', url: '/v1/agents', headers: own })
    t.equal(res.statusCode, 401, 'revoked key is refused on every instance at once')
    t.equal(res.json().code, 'invalid_api_key')
  }
  t.equal(
    (await app.inject({ method: 'DELETE', url: `/v1/api-keys/${key.id}`, headers: auth })).statusCode,
    200,
    'revoking again is idempotent',
  )
  const other = await userWithKey(deps)
  t.equal(
    (await app.inject({ method: 'DELETE', url: `/v1/api-keys/${key.id}`, headers: other.auth })).statusCode,
    404,
    "another user's key is not found",
  )
  t.equal((await app.inject({ method: 'DELETE', url: '/v1/api-keys/not-a-uuid', headers: auth })).statusCode, 404)
})

t.test('dashboard session: login, cookie auth, logout', async (t) => {
  const { deps, app } = await accountsApp(t)
  const u = await userWithKey(deps)
  const wrong = await app.inject({
    method: 'POST',
    url: '/v1/session',
    payload: { email: u.email, password: 'nope nope nope' },
  })
  t.equal(wrong.statusCode, 401)
  t.equal(wrong.json().code, 'invalid_credentials')
  const unknown = await app.inject({
    method: 'POST',
    url: '/v1/session',
    payload: { email: 'nobody@example.com', password: 'whatever12345' },
  })
  t.equal(unknown.json().code, 'invalid_credentials', 'same answer for an unknown email')

  const login = await app.inject({
    method: 'POST',
    url: '/v1/session',
    payload: { email: u.email.toUpperCase(), password: u.password },
  })
  t.equal(login.statusCode, 200)
  const setCookie = String(login.headers['set-cookie'])
  t.match(setCookie, /tollgate_session=ses_[0-9A-Za-z]+;/)
  t.match(setCookie, /HttpOnly/)
  t.match(setCookie, /SameSite=Lax/)
  const cookie = setCookie.split(';')[0]!
  const me = await app.inject({ method: 'GET', url: '/v1/session', headers: { cookie } })
  t.match(me.json(), { user: { id: u.userId }, via: 'session' })
  t.equal(me.json().user.email.toLowerCase(), u.email.toLowerCase(), 'who is calling includes the email')
  const k = await app.inject({
    method: 'POST',
    url: '/v1/api-keys',
    headers: { cookie },
    payload: { name: 'from dashboard' },
  })
  t.equal(k.statusCode, 201, 'keys can be created with the session')
  const list = await app.inject({ method: 'GET', url: '/v1/api-keys', headers: { cookie } })
  t.equal(list.json().data.length, 2)
  t.equal(
    (await app.inject({ method: 'DELETE', url: `/v1/api-keys/${k.json().id}`, headers: { cookie } })).statusCode,
    200,
    'and revoked',
  )

  t.equal((await app.inject({ method: 'DELETE', url: '/v1/session', headers: { cookie } })).statusCode, 204)
  const after = await app.inject({ method: 'GET', url: '/v1/agents', headers: { cookie } })
  t.equal(after.statusCode, 401, 'logged out everywhere')
  t.equal(after.json().code, 'missing_api_key')
})

t.test('login is rate limited per address', async (t) => {
  const { app } = await accountsApp(t, {}, { v1: { loginPerMinute: 3 } })
  const codes: number[] = []
  for (let i = 0; i < 5; i++)
    codes.push(
      (
        await app.inject({
          method: 'POST',
          url: '/v1/session',
          payload: { email: `x${i}@example.com`, password: 'whatever12345' },
        })
      ).statusCode,
    )
  t.same(codes, [401, 401, 401, 429, 429])
})

t.test('user CLI and the demo account', async (t) => {
  const { deps, app } = await accountsApp(t)
  const out: string[] = []
  const io = { out: (l: string) => out.push(l), err: (l: string) => out.push(l), env: {}, config: deps.config }
  t.equal(await createUserCli(['create', '--email', 'first@example.com', '--password', 'a long password'], io), 0)
  t.match(out.join('\n'), /created user first@example.com/)
  t.notOk(out.join('\n').includes('a long password'))
  t.equal(
    await createUserCli(['create', '--email', 'FIRST@example.com', '--password', 'a long password'], io),
    1,
    'email is unique, case-insensitively',
  )
  t.equal(await createUserCli(['create', '--email', 'x@example.com', '--password', 'short'], io), 1)
  t.equal(await createUserCli(['delete'], io), 2)
  const row = await deps.db
    .selectFrom('users')
    .select('password_hash')
    .where('email', '=', 'first@example.com')
    .executeTakeFirstOrThrow()
  t.match(row.password_hash, /^scrypt\$32768\$8\$1\$/)

  const a = await ensureDemoAccount(deps)
  const b = await ensureDemoAccount(deps)
  t.equal(a.email, b.email)
  t.equal(a.password, b.password, 'the demo password is stable across starts')
  t.not(a.apiKey, b.apiKey, 'a new demo key each start')
  t.equal(
    (await app.inject({ method: 'GET', url: '/v1/agents', headers: { authorization: `Bearer ${a.apiKey}` } }))
      .statusCode,
    401,
    'the previous demo key is revoked',
  )
  t.equal(
    (await app.inject({ method: 'GET', url: '/v1/agents', headers: { authorization: `Bearer ${b.apiKey}` } }))
      .statusCode,
    200,
  )
  t.equal(
    (await app.inject({ method: 'POST', url: '/v1/session', payload: { email: b.email, password: b.password } }))
      .statusCode,
    200,
  )

  // the demo payer is also the demo user's agent: listed, its key usable under the master key, its payments in the history
  const key = generatePrivateKey()
  const payer = { address: privateKeyToAccount(key).address.toLowerCase(), privateKey: key }
  t.equal(await ensureDemoPayerAgent(deps, b.userId, payer), true)
  t.equal(await ensureDemoPayerAgent(deps, b.userId, payer), true, 'again on the next start')
  const demoAuth = { authorization: `Bearer ${b.apiKey}` }
  const agents = (await app.inject({ method: 'GET', url: '/v1/agents', headers: demoAuth })).json().data
  t.match(agents, [{ name: 'demo payer', address: privateKeyToAccount(key).address }], 'one agent, checksummed')
  const agentRow = await deps.db
    .selectFrom('agents')
    .select(['address', 'encrypted_key'])
    .where('address', '=', privateKeyToAccount(key).address)
    .executeTakeFirstOrThrow()
  t.notOk(agentRow.encrypted_key.includes(key.slice(2)), 'the key is stored encrypted')
  t.equal(
    custodialAccount([deps.config.masterKey!], 'agent', agentRow.address, agentRow.encrypted_key).address,
    privateKeyToAccount(key).address,
    'and decrypts to the same account',
  )
  await deps.db
    .insertInto('payments')
    .values({
      id: randomUUID(),
      resource: 'http://proxy/tollgate/toolbox/hash-generator',
      method: 'GET',
      x402_version: 2,
      network: 'eip155:84532',
      asset: '0x036CbD53842c5426634e7929541eC2318f3dCF7e',
      payer: payer.address,
      pay_to: '0x' + '22'.repeat(20),
      value: '1000',
      valid_after: 0,
      valid_before: 2_000_000_000,
      nonce: '0x' + '01'.repeat(32),
      signature: '0xsig',
      status: 'served',
    })
    .execute()
  t.equal(
    (await app.inject({ method: 'GET', url: '/v1/transactions', headers: demoAuth })).json().data.length,
    1,
    "the demo payer's payment is in the demo user's transactions",
  )
  const stranger = await userWithKey(deps)
  t.equal(
    await ensureDemoPayerAgent(deps, stranger.userId, payer),
    false,
    "another user's agent at that address is left alone",
  )
  t.equal(
    (
      await deps.db
        .selectFrom('agents')
        .select('user_id')
        .where('address', '=', agentRow.address)
        .executeTakeFirstOrThrow()
    ).user_id,
    b.userId,
  )
})

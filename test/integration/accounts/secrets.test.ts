import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { sql } from 'kysely'
import t from 'tap'
import { custodialAccount } from '../../../src/services/wallets/custodial-wallet.js'
import { decryptSecret } from '../../../src/secrets/wallet-crypto.js'
import { accountsApp, MASTER_KEY, userWithKey } from '../../helpers/accounts.js'

t.test(
  'secret scan: no key, wallet key or upstream header value in any later response or in the database',
  async (t) => {
    const { deps, app } = await accountsApp(t, { TOLLGATE_ALLOW_PRIVATE_UPSTREAMS: 'true' })
    const server = createServer((_q, r) => r.end('ok'))
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    t.teardown(() => new Promise((r) => server.close(r)))
    const u = await userWithKey(deps)
    const secrets: string[] = [u.apiKey, u.password]
    const H = u.auth

    secrets.push(
      (await app.inject({ method: 'POST', url: '/v1/api-keys', headers: H, payload: { name: 'k2' } })).json().secret,
    )
    const agent = (await app.inject({ method: 'POST', url: '/v1/agents', headers: H, payload: { name: 'a' } })).json()
    secrets.push(
      (
        await app.inject({
          method: 'POST',
          url: `/v1/agents/${agent.address}/keys`,
          headers: H,
          payload: { name: 'k' },
        })
      ).json().secret,
    )
    await app.inject({
      method: 'POST',
      url: `/v1/agents/${agent.address}/allowlist`,
      headers: H,
      payload: { kind: 'host', value: 'api.example.com' },
    })
    await app.inject({ method: 'GET', url: '/v1/funding-wallet', headers: H }) // creates the funding wallet and its encrypted key
    await app.inject({ method: 'POST', url: '/v1/sellers', headers: H, payload: { namespace: 'scan-me' } })
    await app.inject({
      method: 'POST',
      url: '/v1/sellers/scan-me/services',
      headers: H,
      payload: { name: 'svc', pay_to: agent.address },
    })
    const upstreamValue = 'UPSTREAM-HEADER-VALUE-0123456789'
    const ep = await app.inject({
      method: 'POST',
      url: '/v1/sellers/scan-me/services/svc/endpoints',
      headers: H,
      payload: {
        slug: 'ep-one',
        price: '5',
        upstream_url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
        upstream: { forward_headers: { 'x-key': upstreamValue } },
      },
    })
    secrets.push(upstreamValue, ep.json().signing_secret)
    const login = await app.inject({
      method: 'POST',
      url: '/v1/session',
      payload: { email: u.email, password: u.password },
    })
    secrets.push(String(login.headers['set-cookie']).split(';')[0]!.split('=')[1]!)

    // the wallet private keys, decrypted here only to search for them
    const keys = [Buffer.from(MASTER_KEY, 'hex')]
    for (const w of await deps.db.selectFrom('agents').select(['address', 'encrypted_key']).execute()) {
      const pk = decryptSecret(keys, w.encrypted_key, `agent-wallet:${w.address.toLowerCase()}`)
      t.equal(custodialAccount(keys, 'agent', w.address, w.encrypted_key).address, w.address)
      secrets.push(pk, pk.slice(2))
    }
    for (const w of await deps.db.selectFrom('funding_wallets').select(['address', 'encrypted_key']).execute()) {
      const pk = decryptSecret(keys, w.encrypted_key, `funding-wallet:${w.address.toLowerCase()}`)
      secrets.push(pk, pk.slice(2))
    }
    t.ok(
      secrets.every((s) => typeof s === 'string' && s.length >= 10),
      `${secrets.length} secrets to look for`,
    )

    const bodies: string[] = []
    for (const url of [
      '/v1/api-keys',
      '/v1/agents',
      `/v1/agents/${agent.address}`,
      `/v1/agents/${agent.address}/keys`,
      `/v1/agents/${agent.address}/allowlist`,
      `/v1/agents/${agent.address}/spend-caps`,
      `/v1/agents/${agent.address}/top-up`,
      '/v1/funding-wallet',
      '/v1/sellers',
      '/v1/sellers/scan-me/services',
      '/v1/sellers/scan-me/services/svc/endpoints',
      '/v1/sellers/scan-me/services/svc/endpoints/ep-one',
      '/v1/transactions',
      '/v1/payment-events',
      '/v1/session',
    ]) {
      const res = await app.inject({ method: 'GET', url, headers: H })
      bodies.push(res.body + JSON.stringify(res.headers))
    }
    const tested = await app.inject({
      method: 'POST',
      url: '/v1/sellers/scan-me/services/svc/endpoints/ep-one/test',
      headers: H,
      payload: {},
    })
    bodies.push(tested.body)
    bodies.push(
      (await app.inject({ method: 'PATCH', url: `/v1/agents/${agent.address}`, headers: H, payload: { name: 'b' } }))
        .body,
    )
    bodies.push(
      (await app.inject({ method: 'GET', url: '/v1/agents', headers: { authorization: `Bearer ${u.apiKey}x` } })).body,
    )
    bodies.push((await app.inject({ method: 'GET', url: '/docs/json' })).body)
    for (const s of secrets)
      t.notOk(
        bodies.some((b) => b.includes(s)),
        `no response shows the secret ${s.slice(0, 6)}…`,
      )

    // every text, json and array column of every table, as text
    const cols = await sql<{ table_name: string; column_name: string }>`
    select table_name, column_name from information_schema.columns
    where table_schema = ${deps.config.databaseSchema} and data_type in ('text', 'character varying', 'jsonb', 'json', 'ARRAY')`.execute(
      deps.db,
    )
    let scanned = 0
    for (const { table_name, column_name } of cols.rows) {
      const rows = await sql<{
        v: string | null
      }>`select ${sql.ref(column_name)}::text as v from ${sql.table(table_name)}`.execute(deps.db)
      for (const r of rows.rows) {
        scanned++
        if (r.v === null) continue
        for (const s of secrets) if (r.v.includes(s)) t.fail(`${table_name}.${column_name} holds a secret in plaintext`)
      }
    }
    t.ok(scanned > 20, `scanned ${scanned} values in ${cols.rows.length} columns`)
    // Redis (idempotency answers) holds no plaintext either
    for (const k of await deps.redis.keys(deps.key('*'))) {
      const type = await deps.redis.type(k)
      if (type !== 'string') continue
      const v = String(await deps.redis.get(k))
      for (const s of secrets) if (v.includes(s)) t.fail(`redis ${k} holds a secret`)
    }
  },
)

t.test('OpenAPI at /docs and /docs/json documents every /v1 route', async (t) => {
  const { app } = await accountsApp(t)
  const doc = (await app.inject({ method: 'GET', url: '/docs/json' })).json()
  t.equal(doc.openapi, '3.0.3')
  const routes = app.printRoutes({ commonPrefix: false })
  const paths = Object.keys(doc.paths)
  for (const p of [
    '/v1/agents',
    '/v1/agents/{address}',
    '/v1/agents/{address}/keys',
    '/v1/agents/{address}/keys/{id}',
    '/v1/agents/{address}/allowlist',
    '/v1/agents/{address}/spend-caps',
    '/v1/agents/{address}/top-up',
    '/v1/agents/{address}/balance',
    '/v1/api-keys',
    '/v1/api-keys/{id}',
    '/v1/session',
    '/v1/transactions',
    '/v1/payment-events',
    '/v1/funding-wallet',
    '/v1/funding-wallet/faucet',
    '/v1/sellers',
    '/v1/sellers/{namespace}/services/{service}/endpoints/{slug}/test',
  ]) {
    t.ok(paths.includes(p), `documents ${p}`)
  }
  t.ok(routes.length > 0)
  t.ok(doc.components.securitySchemes.apiKey)
  const ui = await app.inject({ method: 'GET', url: '/docs/' })
  t.equal(ui.statusCode, 200)
  t.match(ui.headers['content-type'], /html/)
})

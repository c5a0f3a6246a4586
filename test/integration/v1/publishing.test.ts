import { createHash, createHmac } from 'node:crypto'
import { createServer, type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Redis } from 'ioredis'
import t from 'tap'
import { registryChannel } from '../../../src/services/registry-events.js'
import { decodeUpstreamConfig } from '../../../src/services/publishing/upstream-config.js'
import { TEST_REDIS_URL } from '../../helpers/test-env.js'
import { accountsApp, MASTER_KEY, userWithKey } from '../../helpers/accounts.js'

const PAY_TO = '0x1111111111111111111111111111111111111111'

async function upstream(t: { teardown(fn: () => unknown): void }) {
  const seen: Array<{ method: string; url: string; headers: IncomingHttpHeaders }> = []
  const server = createServer((req, res) => {
    seen.push({ method: req.method!, url: req.url!, headers: req.headers })
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}')
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  t.teardown(() => new Promise((r) => server.close(r)))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/api`, seen }
}

t.test('publish: namespace, service, endpoint rows + registry messages; test action; unpublish', async (t) => {
  const { deps, app } = await accountsApp(t, { TOLLGATE_ALLOW_PRIVATE_UPSTREAMS: 'true' })
  const { auth } = await userWithKey(deps)
  const other = await userWithKey(deps)
  const origin = await upstream(t)
  const sub = new Redis(TEST_REDIS_URL)
  t.teardown(() => sub.disconnect())
  const messages: Array<Record<string, unknown>> = []
  sub.on('message', (_c, m) => messages.push(JSON.parse(m)))
  await sub.subscribe(registryChannel(deps))

  const ns = await app.inject({
    method: 'POST',
    url: '/v1/sellers',
    headers: auth,
    payload: { namespace: 'acme-data', display_name: 'Acme' },
  })
  t.equal(ns.statusCode, 201)
  t.equal(
    (await app.inject({ method: 'POST', url: '/v1/sellers', headers: other.auth, payload: { namespace: 'acme-data' } }))
      .statusCode,
    409,
    'namespaces are unique',
  )
  for (const bad of ['AB', 'a', 'has space', '-lead', 'trail-', 'dou--ble'])
    t.equal(
      (await app.inject({ method: 'POST', url: '/v1/sellers', headers: auth, payload: { namespace: bad } })).json()
        .param,
      'namespace',
      bad,
    )

  t.equal(
    (
      await app.inject({
        method: 'POST',
        url: '/v1/sellers/acme-data/services',
        headers: auth,
        payload: { name: 'prices', pay_to: '0x12' },
      })
    ).json().param,
    'pay_to',
  )
  const svc = await app.inject({
    method: 'POST',
    url: '/v1/sellers/acme-data/services',
    headers: auth,
    payload: { name: 'prices', pay_to: PAY_TO },
  })
  t.equal(svc.statusCode, 201)
  t.equal(
    (
      await app.inject({
        method: 'POST',
        url: '/v1/sellers/acme-data/services',
        headers: other.auth,
        payload: { name: 'x', pay_to: PAY_TO },
      })
    ).statusCode,
    404,
    "another user's namespace is not found",
  )

  const ep = await app.inject({
    method: 'POST',
    url: '/v1/sellers/acme-data/services/prices/endpoints',
    headers: auth,
    payload: {
      slug: 'spot',
      methods: ['get', 'POST'],
      price: '1000',
      description: 'spot price',
      input_schema: { type: 'object', properties: { symbol: { type: 'string' } } },
      upstream_url: origin.url,
      upstream: {
        forward_headers: { 'X-Upstream-Key': 'upstream-secret-value-123' },
        required_headers: ['X-Customer'],
        timeout_ms: 2000,
        rate_limit: { requests: 10, per_seconds: 60 },
      },
    },
  })
  t.equal(ep.statusCode, 201)
  const e = ep.json()
  t.match(e, {
    object: 'endpoint',
    slug: 'spot',
    methods: ['GET', 'POST'],
    price: '1000',
    upstream: {
      forward_headers: ['x-upstream-key'],
      required_headers: ['x-customer'],
      timeout_ms: 2000,
      rate_limit: { requests: 10, per_seconds: 60 },
      signing_secret_set: true,
    },
  })
  t.match(e.url, /\/acme-data\/prices\/spot$/)
  t.match(e.signing_secret, /^tgs_/)
  t.notOk(ep.body.includes('upstream-secret-value-123'), 'the forwarded header value is never shown')

  const row = await deps.db
    .selectFrom('endpoints as e')
    .innerJoin('services as s', 's.id', 'e.service_id')
    .innerJoin('sellers as sl', 'sl.id', 's.seller_id')
    .select([
      'e.id',
      'e.slug',
      'e.price',
      'e.methods',
      'e.upstream_url',
      'e.upstream_config',
      's.pay_to',
      'sl.namespace',
      'sl.owner_user_id',
    ])
    .where('e.slug', '=', 'spot')
    .executeTakeFirstOrThrow()
  t.match(row, {
    slug: 'spot',
    price: '1000',
    methods: ['GET', 'POST'],
    upstream_url: origin.url,
    pay_to: PAY_TO,
    namespace: 'acme-data',
  })
  t.notOk(JSON.stringify(row.upstream_config).includes('upstream-secret-value-123'), 'stored encrypted')
  const decoded = decodeUpstreamConfig(row.upstream_config, row.id, [Buffer.from(MASTER_KEY, 'hex')])
  t.same(decoded.headers, { 'x-upstream-key': 'upstream-secret-value-123' }, 'the proxy can decrypt it')
  t.equal(decoded.signingSecret, e.signing_secret)

  const tested = await app.inject({
    method: 'POST',
    url: '/v1/sellers/acme-data/services/prices/endpoints/spot/test',
    headers: auth,
    payload: {},
  })
  t.match(tested.json(), { object: 'upstream_test', ok: true, status: 200, error: null })
  t.ok(tested.json().latency_ms >= 0)
  const call = origin.seen.at(-1)!
  t.equal(call.headers['x-upstream-key'], 'upstream-secret-value-123', 'forwarded header sent')
  const [, ts, mac] = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(String(call.headers['x-tollgate-signature']))!
  const expected = createHmac('sha256', e.signing_secret)
    .update(`${ts}.GET./api.${createHash('sha256').update('').digest('hex')}`)
    .digest('hex')
  t.equal(mac, expected, 'the upstream can verify the HMAC')

  const patched = await app.inject({
    method: 'PATCH',
    url: '/v1/sellers/acme-data/services/prices/endpoints/spot',
    headers: auth,
    payload: { price: '2000', upstream: { timeout_ms: 3000 } },
  })
  t.match(patched.json(), { price: '2000', upstream: { timeout_ms: 3000, forward_headers: ['x-upstream-key'] } })
  t.notOk('signing_secret' in patched.json(), 'the signing secret is kept, not reissued')
  t.equal(
    decodeUpstreamConfig(
      (
        await deps.db
          .selectFrom('endpoints')
          .select('upstream_config')
          .where('id', '=', row.id)
          .executeTakeFirstOrThrow()
      ).upstream_config,
      row.id,
      [Buffer.from(MASTER_KEY, 'hex')],
    ).signingSecret,
    e.signing_secret,
  )

  const hosted = await app.inject({
    method: 'POST',
    url: '/v1/sellers/acme-data/services/prices/endpoints',
    headers: auth,
    payload: { slug: 'hash', price: '1000', handler: 'hash-generator' },
  })
  t.match(hosted.json(), { handler: 'hash-generator', upstream_url: null, upstream: null })
  t.equal(
    (
      await app.inject({
        method: 'POST',
        url: '/v1/sellers/acme-data/services/prices/endpoints',
        headers: auth,
        payload: { slug: 'both', price: '1', handler: 'x', upstream_url: origin.url },
      })
    ).statusCode,
    400,
  )
  for (const [payload, param] of [
    [{ slug: 'ep-one', price: '0', handler: 'h' }, 'price'],
    [{ slug: 'ep-one', price: '-3', handler: 'h' }, 'price'],
    [{ slug: 'ep-one', price: '1', handler: 'h', methods: ['TRACE'] }, 'methods'],
    [{ slug: 'ep-one', price: '1', handler: 'h', settlement_mode: 'later' }, 'settlement_mode'],
    [{ slug: 'ep-one', price: '1', upstream_url: 'ftp://x' }, 'upstream_url'],
    [{ slug: 'ep-one', price: '1', upstream_url: origin.url, upstream: { timeout_ms: 5 } }, 'upstream.timeout_ms'],
    [{ slug: 'ep-one', price: '1', handler: 'hash-generatr' }, 'handler'],
    [{ slug: 'mcp', price: '1', handler: 'hash-generator' }, 'slug'],
  ] as const) {
    const res = await app.inject({
      method: 'POST',
      url: '/v1/sellers/acme-data/services/prices/endpoints',
      headers: auth,
      payload,
    })
    t.equal(res.statusCode, 400, JSON.stringify(payload))
    t.match(String(res.json().param), param)
  }

  // a handler this deployment does not ship is refused by name, on create and on update, and nothing changes
  const typo = await app.inject({
    method: 'POST',
    url: '/v1/sellers/acme-data/services/prices/endpoints',
    headers: auth,
    payload: { slug: 'typo', price: '1000', handler: 'hash-generatr' },
  })
  t.match(typo.json(), {
    code: 'invalid_parameter',
    param: 'handler',
    message: /no hosted handler is named "hash-generatr"/,
  })
  t.equal(
    (await app.inject({ method: 'GET', url: '/v1/sellers/acme-data/services/prices/endpoints/typo', headers: auth }))
      .statusCode,
    404,
    'not published',
  )
  const badSwitch = await app.inject({
    method: 'PATCH',
    url: '/v1/sellers/acme-data/services/prices/endpoints/hash',
    headers: auth,
    payload: { handler: 'no-such-handler' },
  })
  t.equal(badSwitch.statusCode, 400)
  t.equal(badSwitch.json().param, 'handler')
  t.equal(
    (
      await app.inject({ method: 'GET', url: '/v1/sellers/acme-data/services/prices/endpoints/hash', headers: auth })
    ).json().handler,
    'hash-generator',
    'unchanged',
  )

  t.equal(
    (await app.inject({ method: 'DELETE', url: '/v1/sellers/acme-data/services/prices/endpoints/spot', headers: auth }))
      .statusCode,
    204,
  )
  t.equal(
    await deps.db.selectFrom('endpoints').select('id').where('id', '=', row.id).executeTakeFirst(),
    undefined,
    'unpublished',
  )
  await new Promise((r) => setTimeout(r, 100))
  t.ok(
    messages.some((m) => m.slug === 'spot' && !m.deleted),
    'publish announced on the registry channel',
  )
  t.ok(
    messages.some((m) => m.slug === 'spot' && m.deleted === true),
    'unpublish announced',
  )
  t.ok(
    messages.some((m) => m.service === 'prices' && m.slug === undefined),
    'service creation announced',
  )
})

t.test('SSRF guard: private upstreams refused without the test switch', async (t) => {
  const { deps, app } = await accountsApp(t)
  const { auth } = await userWithKey(deps)
  await app.inject({ method: 'POST', url: '/v1/sellers', headers: auth, payload: { namespace: 'seller-two' } })
  await app.inject({
    method: 'POST',
    url: '/v1/sellers/seller-two/services',
    headers: auth,
    payload: { name: 'svc', pay_to: PAY_TO },
  })
  for (const url of [
    'http://127.0.0.1:8080/x',
    'http://localhost/x',
    'http://169.254.169.254/latest',
    'http://[::1]/x',
    'http://10.0.0.5/',
  ]) {
    const res = await app.inject({
      method: 'POST',
      url: '/v1/sellers/seller-two/services/svc/endpoints',
      headers: auth,
      payload: { slug: 'ep1', price: '1', upstream_url: url },
    })
    t.equal(res.statusCode, 400, url)
    t.equal(res.json().code, 'upstream_not_allowed', url)
  }
  // a public-looking name that resolves to loopback is caught at connect time by the test action
  const ok = await app.inject({
    method: 'POST',
    url: '/v1/sellers/seller-two/services/svc/endpoints',
    headers: auth,
    payload: { slug: 'ep2', price: '1', upstream_url: 'http://localtest.me:9/x' },
  })
  if (ok.statusCode === 201) {
    const res = await app.inject({
      method: 'POST',
      url: '/v1/sellers/seller-two/services/svc/endpoints/ep2/test',
      headers: auth,
      payload: {},
    })
    t.equal(res.json().ok, false)
    t.ok(res.json().status === null)
  }
})

t.test(
  'schemes: exact is always offered; only known scheme names; the proxy refuses a scheme the endpoint does not offer',
  async (t) => {
    const { deps, app } = await accountsApp(t)
    const { auth } = await userWithKey(deps)
    t.equal(
      (
        await app.inject({
          method: 'POST',
          url: '/v1/sellers',
          headers: auth,
          payload: { namespace: 'scheme-co', display_name: 'S' },
        })
      ).statusCode,
      201,
    )
    t.equal(
      (
        await app.inject({
          method: 'POST',
          url: '/v1/sellers/scheme-co/services',
          headers: auth,
          payload: { name: 'svc', pay_to: PAY_TO },
        })
      ).statusCode,
      201,
    )
    const url = '/v1/sellers/scheme-co/services/svc/endpoints'
    const made = await app.inject({
      method: 'POST',
      url,
      headers: auth,
      payload: { slug: 'plain', price: '1000', handler: 'hash-generator' },
    })
    t.equal(made.statusCode, 201, made.body)
    t.same(made.json().schemes, ['exact'], 'exact by default')
    const unknown = await app.inject({
      method: 'POST',
      url,
      headers: auth,
      payload: { slug: 'odd', price: '1000', handler: 'hash-generator', schemes: ['exact', 'barter'] },
    })
    t.equal(unknown.statusCode, 400)
    t.match(unknown.json(), { code: 'invalid_parameter', param: 'schemes' })
    t.match(unknown.json().message, /expected an array of exact/)
    const patched = await app.inject({ method: 'PATCH', url: `${url}/plain`, headers: auth, payload: { schemes: [] } })
    t.same(patched.json().schemes, ['exact'], 'an empty list still offers exact')
    const row = await deps.db
      .selectFrom('endpoints')
      .select('schemes')
      .where('slug', '=', 'plain')
      .executeTakeFirstOrThrow()
    t.same(row.schemes, ['exact'])
    await t.rejects(
      deps.db
        .updateTable('endpoints')
        .set({ schemes: ['deferred'] })
        .where('slug', '=', 'plain')
        .execute(),
      /endpoints_schemes_exact/,
      'the database keeps exact offered',
    )
  },
)

import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { randomBytes } from 'node:crypto'
import t from 'tap'
import { createDeps } from '../../../src/deps.js'
import { buildProxyApp } from '../../../src/http/proxy-app.js'
import { buildWebApp } from '../../../src/http/web-app.js'
import { loadHandlerRegistry } from '../../../src/pool/handler-registry.js'
import { createUsers } from '../../../src/services/accounts/users.js'
import { seedHostedServices } from '../../../src/services/hosted-seed.js'
import { createPublishing } from '../../../src/services/publishing/publishing.js'
import { testDeps, testSchema } from '../../helpers/test-env.js'

const RECEIVER = '0x1111111111111111111111111111111111111111'

/** A destination stream that keeps every line. */
function captured() {
  const lines: string[] = []
  return { lines, stream: { write: (s: string) => void lines.push(s) } }
}

t.test('query strings never reach the request logs of the proxy or the web app', async (t) => {
  const deps = await testDeps(t, { LOG_LEVEL: 'trace', TOLLGATE_RECEIVER_ADDRESS: RECEIVER })
  await seedHostedServices(deps, await loadHandlerRegistry())
  const proxyLog = captured()
  const proxy = await buildProxyApp(deps, { logStream: proxyLog.stream })
  t.teardown(() => proxy.close())
  const secret = 'hunter2'
  const calls = [
    '/tollgate/toolbox/password-strength-checker?password=hunter2',
    '/tollgate/toolbox/jwt-decoder-validator?token=x.y.z&secret=hunter2',
    '/tollgate/toolbox/webhook-tester?secret=hunter2&url=https%3A%2F%2Fexample.com',
    '/nobody/nothing/here?password=hunter2',
    '/some/free/path?hunter2',
  ]
  const statuses = []
  for (const url of calls) statuses.push((await proxy.inject({ method: 'GET', url })).statusCode)
  // a paid attempt with a bad header: refused with the challenge, still logged
  statuses.push(
    (await proxy.inject({ method: 'GET', url: calls[0]!, headers: { 'x-payment': 'not-base64!' } })).statusCode,
  )
  t.same(statuses, [402, 402, 402, 404, 404, 402])
  proxy.log.error(
    { err: new Error(`upstream failed for https://seller.example/api?password=${secret}`) },
    'an error naming a URL',
  )
  const proxyText = proxyLog.lines.join('')
  t.ok(proxyText.includes('/tollgate/toolbox/password-strength-checker'), 'the path is logged')
  t.ok(
    proxyLog.lines.some((l) => JSON.parse(l).msg === 'incoming request'),
    'request lines are there',
  )
  t.notOk(proxyText.includes(secret), 'no query value in any proxy log line')

  const webLog = captured()
  const web = await buildWebApp(deps, { logStream: webLog.stream })
  t.teardown(() => web.close())
  web.get('/boom', async (request) => {
    throw new Error(`could not handle ${request.url}`)
  })
  t.equal((await web.inject(`/boom?password=${secret}`)).statusCode, 500)
  t.equal((await web.inject(`/v1/nothing?api_key=${secret}`)).statusCode, 404)
  t.equal((await web.inject({ method: 'POST', url: `/v1/session?password=${secret}`, payload: {} })).statusCode, 400)
  const webText = webLog.lines.join('')
  t.ok(
    webLog.lines.some((l) => JSON.parse(l).msg === 'unhandled error'),
    'the error is logged',
  )
  t.ok(webText.includes('/boom'), 'with its path')
  t.notOk(webText.includes(secret), 'no query value in any web log line, error logs included')
})

t.test('X-Forwarded-For sets request.ip only when TRUST_PROXY names the peer', async (t) => {
  const spoofed = { 'x-forwarded-for': '203.0.113.9' }
  const schema = await testSchema(t)
  const ipOf = async (env: Record<string, string>, which: 'web' | 'proxy') => {
    const deps = await testDeps(t, { ...env, DATABASE_SCHEMA: schema })
    const app =
      which === 'web' ? await buildWebApp(deps, { logger: false }) : await buildProxyApp(deps, { logger: false })
    t.teardown(() => app.close())
    app.get('/test/ip/here', async (request) => ({ ip: request.ip }))
    // inject's peer is 127.0.0.1
    return (await app.inject({ url: '/test/ip/here', headers: spoofed })).json().ip
  }
  for (const which of ['web', 'proxy'] as const) {
    t.equal(await ipOf({}, which), '127.0.0.1', `${which}: a client cannot choose its address by default`)
    t.equal(
      await ipOf({ TRUST_PROXY: '10.0.0.0/8' }, which),
      '127.0.0.1',
      `${which}: nor through a peer that is not a named load balancer`,
    )
    t.equal(
      await ipOf({ TRUST_PROXY: '127.0.0.1' }, which),
      '203.0.113.9',
      `${which}: the named load balancer's header is used`,
    )
    t.equal(await ipOf({ TRUST_PROXY: 'true' }, which), '203.0.113.9', `${which}: true trusts every hop`)
  }
})

t.test(
  'a proxy without TOLLGATE_MASTER_KEY refuses paid calls to seller endpoints whose settings it cannot read',
  async (t) => {
    const hits: string[] = []
    const upstream = createServer((req, res) => {
      hits.push(String(req.url))
      res.end('{"ok":true}')
    })
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r))
    t.teardown(() => new Promise((r) => upstream.close(r)))
    const deps = await testDeps(t, {
      TOLLGATE_MASTER_KEY: randomBytes(32).toString('hex'),
      TOLLGATE_ALLOW_PRIVATE_UPSTREAMS: 'true',
      LOG_LEVEL: 'warn',
    })
    const user = await createUsers(deps).create(`mk-${Date.now()}@example.com`, 'correct horse battery staple')
    const pub = createPublishing(deps)
    await pub.claimNamespace({ userId: user.id }, { namespace: 'keyless', display_name: 'Keyless' })
    await pub.createService({ userId: user.id }, 'keyless', { name: 'svc', pay_to: RECEIVER })
    await pub.createEndpoint({ userId: user.id }, 'keyless', 'svc', {
      slug: 'data',
      methods: ['GET'],
      price: '1000',
      upstream_url: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/data`,
      upstream: { forward_headers: { 'x-seller-key': 'seller-secret' }, required_headers: ['x-city'] },
    })

    const keyless = createDeps({ ...deps.config, masterKey: undefined })
    t.teardown(() => keyless.close())
    const log = captured()
    const proxy = await buildProxyApp(keyless, { logStream: log.stream })
    t.teardown(() => proxy.close())
    const warned = log.lines
      .map((l) => JSON.parse(l))
      .filter((l) => l.level === 40 && /TOLLGATE_MASTER_KEY is not set/.test(l.msg))
    t.equal(warned.length, 1, 'one warning at start')

    const unpaid = await proxy.inject('/keyless/svc/data')
    t.equal(unpaid.statusCode, 402, 'an unpaid call still gets the challenge')
    const paid = await proxy.inject({
      url: '/keyless/svc/data',
      headers: { 'x-city': 'Porto', 'payment-signature': 'c29tZXRoaW5n' },
    })
    t.equal(paid.statusCode, 503)
    t.match(paid.json(), { code: 'service_unavailable', message: /this proxy cannot read the endpoint's settings/ })
    t.same(hits, [], 'nothing forwarded to the seller')
    t.equal((await keyless.db.selectFrom('payments').select('id').execute()).length, 0, 'no payment recorded')
    t.equal((await proxy.inject('/healthz')).statusCode, 200, 'other routes are untouched')
  },
)

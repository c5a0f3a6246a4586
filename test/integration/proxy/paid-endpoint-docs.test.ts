import path from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { buildWebApp } from '../../../src/http/web-app.js'
import { handlersDir, loadHandlerRegistry } from '../../../src/pool/handler-registry.js'
import { seedHostedServices } from '../../../src/services/hosted-seed.js'
import { testDeps } from '../../helpers/test-env.js'

const fixtures = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../fixtures/handlers')

t.test("GET /docs/endpoints/<namespace>.json documents a seller's paid endpoints from the registry", async (t) => {
  const deps = await testDeps(t, { TOLLGATE_RECEIVER_ADDRESS: `0x${'cd'.repeat(20)}` })
  const registry = await loadHandlerRegistry(fixtures)
  await seedHostedServices(deps, registry)
  const app = await buildWebApp(deps, { logger: false })
  t.teardown(() => app.close())

  const res = await app.inject({ url: '/docs/endpoints/tollgate.json' })
  t.equal(res.statusCode, 200)
  const doc = res.json()
  t.equal(doc.openapi, '3.0.3')
  t.same(doc.servers, [{ url: deps.config.proxyUrl }], 'calls go to the proxy')
  t.same(
    Object.keys(doc.paths).sort(),
    [...registry.keys()].map((s) => `/tollgate/toolbox/${s}`).sort(),
    'one path per enabled endpoint',
  )
  const echo = doc.paths['/tollgate/toolbox/echo']
  t.same(Object.keys(echo).sort(), ['get', 'post'])
  t.same(
    echo.get.parameters.map((p: { name: string; in: string; required: boolean; schema: unknown }) => [
      p.name,
      p.in,
      p.required,
      p.schema,
    ]),
    [
      ['msg', 'query', true, { type: 'string', maxLength: 100 }],
      ['n', 'query', false, { type: 'integer', minimum: 0, maximum: 10 }],
    ],
    'GET: the input schema as query parameters, required ones first',
  )
  t.match(
    echo.post.requestBody,
    { required: true, content: { 'application/json': { schema: { required: ['msg'] } } } },
    'POST: the input schema as the JSON body',
  )
  t.match(echo.get.responses[402].description, /0\.001 USDC \(1000 atomic units\) to 0x(cd){20} on eip155:84532/)
  t.same(echo.get['x-price'], {
    amount: '1000',
    asset: deps.config.chain.usdc.address,
    payTo: `0x${'cd'.repeat(20)}`,
    network: 'eip155:84532',
  })
  t.equal(echo.get.summary, 'Echoes its input (test fixture).')

  t.equal((await app.inject({ url: '/docs/endpoints/nobody.json' })).statusCode, 404, 'a seller with no endpoints')
  t.equal((await app.inject({ url: '/docs/endpoints/tollgate' })).statusCode, 404, 'without .json')
  t.equal((await app.inject({ url: '/docs/endpoints/..%2Fx.json' })).statusCode, 404, 'not a namespace')
  t.equal((await app.inject({ url: '/docs/json' })).statusCode, 200, 'the user API document is still there')
})

t.test('the real hosted handlers: arrays of objects travel as JSON in the query string', async (t) => {
  const deps = await testDeps(t, { TOLLGATE_RECEIVER_ADDRESS: `0x${'cd'.repeat(20)}` })
  await seedHostedServices(deps, await loadHandlerRegistry(handlersDir))
  const app = await buildWebApp(deps, { logger: false })
  t.teardown(() => app.close())
  const doc = (await app.inject({ url: '/docs/endpoints/tollgate.json' })).json()
  const vector = doc.paths['/tollgate/toolbox/vector-similarity-search'].get.parameters
  t.match(
    vector.find((p: { name: string }) => p.name === 'items'),
    { in: 'query', required: true, content: { 'application/json': { schema: { type: 'array' } } } },
  )
  t.match(
    vector.find((p: { name: string }) => p.name === 'query'),
    { style: 'form', explode: true, schema: { type: 'array' } },
  )
  t.same(
    Object.keys(doc.paths['/tollgate/wallet-score/wallet-behavior-score-test']),
    ['get'],
    'GET-only endpoints document GET only',
  )
})

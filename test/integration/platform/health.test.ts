import t from 'tap'
import { createDeps } from '../../../src/deps.js'
import { buildProxyApp } from '../../../src/http/proxy-app.js'
import { buildWebApp } from '../../../src/http/web-app.js'
import { withDevnet } from '../../helpers/devnet.js'
import { testConfig } from '../../helpers/test-env.js'

t.test('healthz, readyz and the error shape', async (t) => {
  const devnet = await withDevnet(t)
  const config = await testConfig(t, { RPC_URL: devnet.rpcUrl })

  t.test('all parts up: 200 on both roles', async (t) => {
    const deps = createDeps(config)
    t.teardown(() => deps.close())
    for (const build of [buildWebApp, buildProxyApp]) {
      const app = await build(deps, { logger: false })
      t.teardown(() => app.close())
      t.equal((await app.inject('/healthz')).statusCode, 200)
      const r = await app.inject('/readyz')
      t.equal(r.statusCode, 200, r.body)
      t.same(Object.keys(r.json().checks).sort(), ['chain', 'postgres', 'redis'])
    }
  })

  t.test('unknown route: 404 in the standard shape', async (t) => {
    const deps = createDeps(config)
    t.teardown(() => deps.close())
    const app = await buildWebApp(deps, { logger: false })
    t.teardown(() => app.close())
    const r = await app.inject('/no/such/route')
    t.equal(r.statusCode, 404)
    t.same(Object.keys(r.json()).sort(), ['code', 'error', 'message', 'statusCode'])
    t.equal(r.json().code, 'route_not_found')
    const bad = await app.inject({
      method: 'POST',
      url: '/healthz',
      headers: { 'content-type': 'application/json' },
      payload: '{not json',
    })
    t.ok(bad.statusCode >= 400 && bad.statusCode < 500, `bad JSON is a 4xx (${bad.statusCode})`)
    t.same(Object.keys(bad.json()).sort(), ['code', 'error', 'message', 'statusCode'])
  })

  t.test('Redis unreachable: 503 naming redis', async (t) => {
    const deps = createDeps({ ...config, redisUrl: 'redis://127.0.0.1:1' })
    t.teardown(() => deps.close())
    const app = await buildWebApp(deps, { logger: false })
    t.teardown(() => app.close())
    const r = await app.inject('/readyz')
    t.equal(r.statusCode, 503)
    t.same(r.json().failing, ['redis'])
    t.match(r.json().message, /redis/)
    t.equal(r.json().code, 'not_ready')
  })

  t.test('chain unreachable: 503 naming chain', async (t) => {
    const deps = createDeps({ ...config, rpcUrl: 'http://127.0.0.1:1' })
    t.teardown(() => deps.close())
    const app = await buildProxyApp(deps, { logger: false })
    t.teardown(() => app.close())
    const r = await app.inject('/readyz')
    t.equal(r.statusCode, 503)
    t.same(r.json().failing, ['chain'])
  })

  t.test('Postgres unreachable: 503 naming postgres', async (t) => {
    const deps = createDeps({ ...config, databaseUrl: 'postgres://postgres@127.0.0.1:1/test' })
    t.teardown(() => deps.close())
    const app = await buildWebApp(deps, { logger: false })
    t.teardown(() => app.close())
    const r = await app.inject('/readyz')
    t.equal(r.statusCode, 503)
    t.same(r.json().failing, ['postgres'])
  })
})

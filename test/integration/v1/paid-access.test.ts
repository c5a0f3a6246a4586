import t from 'tap'
import { loadEndpoints } from '../../../src/proxy/endpoint-table.js'
import { accountsApp, userWithKey } from '../../helpers/accounts.js'

const PAY_TO = '0x1111111111111111111111111111111111111111'

t.test('access_minutes (x402 sign-in-with-x): off by default, set on an endpoint or a service, checked', async (t) => {
  const { deps, app } = await accountsApp(t)
  const { auth } = await userWithKey(deps)
  const call = (method: 'POST' | 'PATCH', url: string, payload: Record<string, unknown>) =>
    app.inject({ method, url, headers: auth, payload })
  t.equal((await call('POST', '/v1/sellers', { namespace: 'access-co' })).statusCode, 201)
  const svc = await call('POST', '/v1/sellers/access-co/services', { name: 'svc', pay_to: PAY_TO })
  t.equal(svc.statusCode, 201)
  t.equal(svc.json().access_minutes, null, 'a service: off by default')
  const eps = '/v1/sellers/access-co/services/svc/endpoints'
  const made = await call('POST', eps, { slug: 'plain', price: '1000', handler: 'hash-generator' })
  t.equal(made.statusCode, 201, made.body)
  t.equal(made.json().access_minutes, null, 'an endpoint: off by default')
  const timed = await call('POST', eps, { slug: 'timed', price: '1000', handler: 'hash-generator', access_minutes: 60 })
  t.equal(timed.json().access_minutes, 60)

  let table = await loadEndpoints(deps.db, deps.config)
  t.equal(table.get('/access-co/svc/plain')!.access, undefined, 'no paid access: the 402 declares no sign-in')
  t.equal(table.get('/access-co/svc/plain')!.challenges.get('GET')!.signIn, undefined)
  t.match(table.get('/access-co/svc/timed')!.access, { minutes: 60, scope: 'endpoint' })
  t.match(table.get('/access-co/svc/timed')!.challenges.get('GET')!.signIn, {
    uri: `${deps.config.proxyUrl}/access-co/svc/timed`,
    chainIds: [deps.config.chain.caip2],
  })

  const patched = await call('PATCH', '/v1/sellers/access-co/services/svc', { access_minutes: 15 })
  t.equal(patched.statusCode, 200, patched.body)
  t.equal(patched.json().access_minutes, 15)
  table = await loadEndpoints(deps.db, deps.config)
  t.match(table.get('/access-co/svc/plain')!.access, { minutes: 15, scope: 'service' }, "the service's setting")
  t.match(table.get('/access-co/svc/timed')!.access, { minutes: 60, scope: 'endpoint' }, "the endpoint's own wins")

  for (const bad of [0, -1, 1.5, 'ten', 525_601, [5]]) {
    const r = await call('PATCH', `${eps}/plain`, { access_minutes: bad })
    t.equal(r.statusCode, 400, `${JSON.stringify(bad)}: 400`)
    t.equal(r.json().param, 'access_minutes')
  }
  const off = await call('PATCH', `${eps}/timed`, { access_minutes: null })
  t.equal(off.json().access_minutes, null, 'null turns it off')
  await call('PATCH', '/v1/sellers/access-co/services/svc', { access_minutes: null })
  table = await loadEndpoints(deps.db, deps.config)
  t.equal(table.get('/access-co/svc/timed')!.access, undefined)
})

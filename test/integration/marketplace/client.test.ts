import t from 'tap'
import { buildWebApp } from '../../../src/http/web-app.js'
import {
  createMarketplaceClient,
  DEFAULT_MARKETPLACE_BASE_URL,
  MarketplaceError,
  MarketplaceNotFoundError,
} from '../../../src/marketplace-client.js'
import { syncCatalog } from '../../../src/services/marketplace/sync-catalog.js'
import { testDeps } from '../../helpers/test-env.js'

t.test('read-only client against a running server', async (t) => {
  const deps = await testDeps(t)
  await syncCatalog(deps)
  const app = await buildWebApp(deps, { logger: false })
  t.teardown(() => app.close())
  const address = await app.listen({ host: '127.0.0.1', port: 0 })
  const market = createMarketplaceClient({ baseUrl: `${address}/` })
  t.equal(market.baseUrl, address, 'custom base URL, trailing slash dropped')
  // spec 4.2: the default is the production address; the library reads no environment
  const saved = process.env.TOLLGATE_API_URL
  process.env.TOLLGATE_API_URL = address
  t.teardown(() => {
    if (saved === undefined) delete process.env.TOLLGATE_API_URL
    else process.env.TOLLGATE_API_URL = saved
  })
  t.equal(
    createMarketplaceClient().baseUrl,
    DEFAULT_MARKETPLACE_BASE_URL,
    'production by default, even with TOLLGATE_API_URL set',
  )
  const asked: string[] = []
  const recorder = createMarketplaceClient({
    fetch: (async (u: string) => (
      asked.push(u),
      new Response('[]', { headers: { 'content-type': 'application/json' } })
    )) as typeof fetch,
  })
  t.same(await recorder.listAgents(), [])
  t.same(asked, [`${DEFAULT_MARKETPLACE_BASE_URL}/api/v1/agents/marketplace`], 'and it is the address asked')

  const all = await market.listAgents()
  t.ok(
    all.length > 0 && all.every((a) => a.endpoints.every((e) => e.network === 'base-sepolia')),
    'default network of the server',
  )
  const crypto = await market.listAgents({ source: 'catalog', category: 'Crypto', search: 'RISK' })
  t.same(
    crypto.map((a) => a.id),
    ['example-chainscope'],
  )
  const mainnet = await market.listAgents({ network: 'base' })
  t.ok(mainnet.some((a) => a.id === 'example-pricefeed'))
  const paged = await market.listAgents({}, { pageSize: 2 })
  t.same(
    paged.map((a) => a.id),
    all.map((a) => a.id),
    'follows pages',
  )
  t.equal((await market.listAgents({}, { pageSize: 2, max: 3 })).length, 3)

  const one = await market.getAgent('example-weatherwise')
  t.equal(one.name, 'WeatherWise (example)')
  t.equal(typeof one.created_at, 'number')
  t.equal(typeof one.endpoints[0].pricing_config.amount, 'string')
  t.equal((await market.getAgent('example-pricefeed', { network: 'base' })).id, 'example-pricefeed')

  const err = await market.getAgent('does-not-exist').catch((e: unknown) => e)
  t.ok(err instanceof MarketplaceNotFoundError)
  t.ok(err instanceof MarketplaceError)
  t.match(err, { status: 404, code: 'not_found', id: 'does-not-exist' })

  const bad = await market.listAgents({ source: 'nope' as 'catalog' }).catch((e: unknown) => e)
  t.ok(bad instanceof MarketplaceError && !(bad instanceof MarketplaceNotFoundError))
  t.match(bad, { status: 400, code: 'invalid_parameter' })
})

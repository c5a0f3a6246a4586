/**
 * Endpoint search on a running platform: the official x402 Bazaar client (`@x402/extensions`
 * `withBazaar`, unmodified) lists and searches the web role, and every hosted endpoint is found by
 * a word of its description and ranked first by its own slug through `GET /api/v1/endpoints`.
 */
import t from 'tap'
import { HTTPFacilitatorClient } from '@x402/core/http'
import { withBazaar } from '@x402/extensions'
import { buildWebApp } from '../../../src/http/web-app.js'
import { createMarketplaceClient, MarketplaceError } from '../../../src/marketplace-client.js'
import { loadHandlerRegistry } from '../../../src/pool/handler-registry.js'
import { HOSTED_NAMESPACE } from '../../../src/services/hosted-seed.js'
import { wordsOf } from '../../../src/services/marketplace/endpoint-search.js'
import { announceRegistryChange } from '../../../src/services/registry-events.js'
import { freePort, startTestPlatform } from '../../helpers/platform.js'
import { until } from '../../helpers/until.js'

const platform = await startTestPlatform(t)
const web = await buildWebApp(platform.deps, { logger: false })
const port = await freePort()
await web.listen({ host: '127.0.0.1', port })
t.teardown(() => web.close())
const baseUrl = `http://127.0.0.1:${port}`
const bazaar = withBazaar(new HTTPFacilitatorClient({ url: baseUrl })).extensions.bazaar
const market = createMarketplaceClient({ baseUrl })
const handlers = await loadHandlerRegistry()
const hashUrl = `${platform.proxyUrl}/${HOSTED_NAMESPACE}/toolbox/hash-generator`

t.test('the official Bazaar client: search("hash") finds hash-generator first, and it is payable', async (t) => {
  const found = await bazaar.search({ query: 'hash' })
  t.equal(found.x402Version, 2)
  t.equal(found.resources[0]?.resource, hashUrl, 'first')
  t.match(found.resources[0], {
    type: 'http',
    x402Version: 2,
    accepts: [{ scheme: 'exact', network: platform.deps.config.chain.caip2, amount: '1000' }],
    serviceName: 'Tollgate Toolbox',
  })
  t.match(found.pagination, { limit: found.resources.length })
  // the resource is what the proxy sells: its 402 asks for the same terms
  const res = await fetch(`${hashUrl}?text=abc`)
  await res.body?.cancel()
  t.equal(res.status, 402)
  const listed = await bazaar.listResources({ type: 'http', limit: 500 })
  t.ok(
    listed.items.some((i) => i.resource === hashUrl),
    'listResources has it too',
  )
  t.equal(listed.items.length, handlers.size, 'one item per hosted endpoint')
})

t.test('Bazaar search pages with its cursor and honours its filters', async (t) => {
  const seen: string[] = []
  let cursor: string | undefined
  let all = 0
  do {
    const page = await bazaar.search({ query: 'wallet', limit: 2, cursor })
    t.ok(page.resources.length <= 2)
    seen.push(...page.resources.map((r) => r.resource))
    cursor = page.pagination?.cursor ?? undefined
    all++
  } while (cursor && all < 100)
  const whole = await bazaar.search({ query: 'wallet', limit: 100 })
  t.same(
    seen,
    whole.resources.map((r) => r.resource),
    'pages in order, no repeats, nothing missed',
  )
  t.ok(seen.length > 2, `${seen.length} results over several pages`)
  t.equal((await bazaar.search({ query: 'hash', type: 'mcp' })).resources.length, 0, 'type mcp: none')
  t.equal((await bazaar.search({ query: 'hash', network: 'eip155:1' })).resources.length, 0, 'another network: none')
  t.equal(
    (await bazaar.search({ query: 'hash', payTo: '0x0000000000000000000000000000000000000001' })).resources.length,
    0,
    'another payee: none',
  )
  const mine = await bazaar.search({ query: 'hash', payTo: platform.deps.config.receiverAddress! })
  t.equal(mine.resources[0]?.resource, hashUrl, 'its own payee')
  await t.rejects(bazaar.search({ query: '' }), /400/, 'an empty query is a 400')
})

t.test('every hosted endpoint is found by a word of its description and ranked first by its slug', async (t) => {
  // a word of the description that is no common English word, so the check is about this endpoint
  const common = new Set(['with', 'from', 'that', 'this', 'into', 'over', 'each', 'their', 'when', 'only', 'given'])
  for (const [slug, { module }] of handlers) {
    const url = `/${HOSTED_NAMESPACE}/`
    const bySlug = await market.searchEndpoints({ search: slug, limit: 1 })
    t.equal(bySlug.items[0]?.slug, slug, `"${slug}" ranks ${slug} first`)
    t.ok(bySlug.items[0]?.url.includes(url), 'the hosted one')
    const word = wordsOf(module.description)
      .filter((w) => w.length >= 4 && !common.has(w))
      .sort((a, b) => b.length - a.length)[0]!
    let found = false
    let cursor: string | undefined
    do {
      const page = await market.searchEndpoints({ search: word, namespace: HOSTED_NAMESPACE, limit: 100, cursor })
      found = page.items.some((i) => i.slug === slug)
      cursor = page.nextCursor ?? undefined
    } while (!found && cursor)
    t.ok(found, `"${word}" (from its description) finds ${slug}`)
  }
})

t.test('GET /api/v1/endpoints: prices, filters, pages, clear 400s', async (t) => {
  const first = await market.searchEndpoints({ search: 'hash' })
  t.match(first.items[0], {
    slug: 'hash-generator',
    namespace: HOSTED_NAMESPACE,
    service: 'toolbox',
    methods: ['GET', 'POST'],
    price: { amount: '1000', usdc: '0.001', currency: 'USDC' },
    example: false,
    mcp: { server: `${platform.proxyUrl}/${HOSTED_NAMESPACE}/toolbox/mcp`, tool: 'hash-generator' },
  })
  t.ok(first.items[0]!.inputFields.includes('algorithms'), 'input fields')
  t.ok(first.items[0]!.score > first.items[1]!.score, 'the slug match outranks the next')
  // wallet-score endpoints cost 0.01 and take GET only
  const cheap = await market.searchEndpoints({ search: 'wallet', maxPrice: '0.001', limit: 100 })
  t.notOk(
    cheap.items.some((i) => i.service === 'wallet-score'),
    'maxPrice drops the 0.01 USDC endpoints',
  )
  const dear = await market.searchEndpoints({ search: 'wallet', maxPrice: '0.01', limit: 100 })
  t.ok(
    dear.items.some((i) => i.service === 'wallet-score'),
    'and keeps them at 0.01',
  )
  const posts = await market.searchEndpoints({ search: 'score', method: 'post', limit: 100 })
  t.notOk(
    posts.items.some((i) => i.service === 'wallet-score'),
    'method POST drops the GET-only ones',
  )
  t.equal((await market.searchEndpoints({ search: 'hash', namespace: 'nobody' })).total, 0, 'namespace')
  t.equal((await market.searchEndpoints({ search: 'hash', scheme: 'deferred' })).total, 0, 'scheme')
  const all = await market.searchEndpoints({ namespace: HOSTED_NAMESPACE, limit: 100 })
  t.equal(all.total, handlers.size, 'no words: every endpoint')
  const p1 = await market.searchEndpoints({ namespace: HOSTED_NAMESPACE, limit: 50 })
  const p2 = await market.searchEndpoints({ namespace: HOSTED_NAMESPACE, limit: 50, cursor: p1.nextCursor! })
  t.same(
    [...p1.items, ...p2.items].map((i) => i.id),
    all.items.map((i) => i.id),
    'two pages are the one',
  )
  const p3 = await market.searchEndpoints({ namespace: HOSTED_NAMESPACE, limit: 50, cursor: p2.nextCursor! })
  t.equal(p3.items.length, handlers.size - 100, 'the rest')
  t.equal(p3.nextCursor, null, 'the last page says so')
  for (const [q, param] of [
    ['maxPrice=cheap', 'maxPrice'],
    ['cursor=nope!', 'cursor'],
    ['limit=0', 'limit'],
    ['method=FETCH', 'method'],
    ['search=', 'search'],
  ] as const) {
    const res = await fetch(`${baseUrl}/api/v1/endpoints?${q}`)
    const body = (await res.json()) as { code: string; message: string }
    t.equal(res.status, 400, q)
    t.equal(body.code, 'invalid_parameter')
    t.match(body.message, param)
  }
  await t.rejects(market.searchEndpoints({ maxPrice: 'x' }), MarketplaceError)
})

t.test('the index follows the registry: a disabled endpoint is no longer found', async (t) => {
  const { deps } = platform
  await deps.db.updateTable('endpoints').set({ enabled: false }).where('slug', '=', 'hash-generator').execute()
  await announceRegistryChange(deps)
  await until('hash-generator gone from search', async () => {
    const page = await market.searchEndpoints({ search: 'hash-generator' })
    return page.items.every((i) => i.slug !== 'hash-generator')
  })
  t.not((await bazaar.search({ query: 'hash' })).resources[0]?.resource, hashUrl)
  await deps.db.updateTable('endpoints').set({ enabled: true }).where('slug', '=', 'hash-generator').execute()
  await announceRegistryChange(deps)
  await until('hash-generator back', async () => {
    const page = await market.searchEndpoints({ search: 'hash-generator' })
    return page.items[0]?.slug === 'hash-generator'
  })
})

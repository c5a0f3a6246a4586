import t from 'tap'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import { marketStandIn, type RecordedRequest } from '../../test/helpers/market-stand-in.js'
import { compileInputValidator } from '../../src/pool/input-validator.js'
import handler from './index.js'

const BAYC = '0xbc4ca0eda7647a8ab7c2061c2e118a18a936f13d'
// the documented shapes of https://docs.opensea.io/reference/get_collection_stats, get_collection and get_contract
const stats = {
  total: {
    volume: 1402312.55,
    sales: 48210,
    average_price: 29.09,
    num_owners: 5512,
    market_cap: 118000.4,
    floor_price: 11.8,
    floor_price_symbol: 'ETH',
  },
  intervals: [
    {
      interval: 'one_day',
      volume: 95.2,
      volume_diff: -20.1,
      volume_change: -0.174,
      sales: 8,
      sales_diff: -2,
      average_price: 11.9,
    },
    {
      interval: 'seven_day',
      volume: 812.4,
      volume_diff: 100.5,
      volume_change: 0.141,
      sales: 67,
      sales_diff: 5,
      average_price: 12.12,
    },
    {
      interval: 'thirty_day',
      volume: 3020,
      volume_diff: 0,
      volume_change: 0,
      sales: 250,
      sales_diff: 0,
      average_price: 12.08,
    },
  ],
}
const collection = {
  collection: 'boredapeyachtclub',
  name: 'Bored Ape Yacht Club',
  description: 'BAYC',
  opensea_url: 'https://opensea.io/collection/boredapeyachtclub',
  contracts: [{ address: BAYC, chain: 'ethereum' }],
  total_supply: 10000,
}
const contract = {
  address: BAYC,
  chain: 'ethereum',
  collection: 'boredapeyachtclub',
  contract_standard: 'erc721',
  name: 'BoredApeYachtClub',
}

function route(req: RecordedRequest) {
  if (req.path === '/api/v2/collections/boredapeyachtclub/stats') return { body: stats }
  if (req.path === '/api/v2/collections/boredapeyachtclub') return { body: collection }
  if (req.path === `/api/v2/chain/ethereum/contract/${BAYC}`) return { body: contract }
  if (req.path.startsWith('/api/v2/chain/')) return { status: 400, body: { errors: ['Contract not found'] } }
  return { status: 404, body: { errors: ['Collection not found'] } }
}

t.test('floor price and stats by slug', async (t) => {
  t.equal(
    compileInputValidator(handler).validate(structuredClone(handler.example), 'body'),
    null,
    'the example is valid',
  )
  const api = await marketStandIn(t, route)
  const out = okBody(
    await runInline(handler, handler.example, { providers: { OPENSEA_API_URL: api.url, OPENSEA_API_KEY: 'os-key' } }),
  )
  t.match(out, {
    source: 'opensea',
    found: true,
    slug: 'boredapeyachtclub',
    name: 'Bored Ape Yacht Club',
    floorPrice: 11.8,
    floorPriceSymbol: 'ETH',
    volume: 1402312.55,
    sales: 48210,
    averagePrice: 29.09,
    owners: 5512,
    marketCap: 118000.4,
    totalSupply: 10000,
    openseaUrl: 'https://opensea.io/collection/boredapeyachtclub',
  })
  t.same(out.contracts, [{ address: BAYC, chain: 'ethereum' }])
  t.same(out.intervals[0], {
    interval: 'one_day',
    volume: 95.2,
    volumeChange: -0.174,
    volumeDiff: -20.1,
    sales: 8,
    salesDiff: -2,
    averagePrice: 11.9,
  })
  t.equal(out.intervals.length, 3)
  t.same(api.requests.map((r) => r.path).sort(), [
    '/api/v2/collections/boredapeyachtclub',
    '/api/v2/collections/boredapeyachtclub/stats',
  ])
  for (const r of api.requests) t.equal(r.headers['x-api-key'], 'os-key')
})

t.test('by contract address: mapped to the collection', async (t) => {
  const api = await marketStandIn(t, route)
  const providers = { OPENSEA_API_URL: api.url, OPENSEA_API_KEY: 'k' }
  const out = okBody(await runInline(handler, { contractAddress: BAYC }, { from: 'query', providers }))
  t.equal(api.requests[0]!.path, `/api/v2/chain/ethereum/contract/${BAYC}`)
  t.match(out, { found: true, slug: 'boredapeyachtclub', floorPrice: 11.8 })
  const unknown = okBody(
    await runInline(
      handler,
      { contractAddress: '0x0000000000000000000000000000000000000001', chain: 'base' },
      { providers },
    ),
  )
  t.match(unknown, { found: false, chain: 'base' })
  t.equal(api.last().path, '/api/v2/chain/base/contract/0x0000000000000000000000000000000000000001')
})

t.test('unknown collection: found false', async (t) => {
  const api = await marketStandIn(t, route)
  t.match(
    okBody(
      await runInline(
        handler,
        { slug: 'no-such-collection' },
        { providers: { OPENSEA_API_URL: api.url, OPENSEA_API_KEY: 'k' } },
      ),
    ),
    { found: false, slug: 'no-such-collection' },
  )
})

t.test('bad input: 400 naming the field', async (t) => {
  const providers = { OPENSEA_API_URL: 'http://127.0.0.1:1', OPENSEA_API_KEY: 'k' }
  t.match(await runInline(handler, {}, { providers }), { ok: false, status: 400, field: 'slug' })
  t.match(await runInline(handler, { slug: 'a', contractAddress: BAYC }, { providers }), {
    ok: false,
    status: 400,
    field: 'contractAddress',
  })
  t.match(await runInline(handler, { slug: 'Bad Slug!' }, { providers }), { ok: false, status: 400, field: 'slug' })
  t.match(await runInline(handler, { contractAddress: '0x12' }, { providers }), {
    ok: false,
    status: 400,
    field: 'contractAddress',
  })
  t.match(await runInline(handler, { contractAddress: BAYC, chain: 'Ethereum Mainnet' }, { providers }), {
    ok: false,
    status: 400,
    field: 'chain',
  })
})

t.test('provider problems', async (t) => {
  await t.rejects(runInline(handler, handler.example, { providers: {} }), { code: 'upstream_not_configured' })
  const api = await marketStandIn(t, () => ({ status: 401, body: { detail: 'Invalid API key' } }))
  await t.rejects(runInline(handler, handler.example, { providers: { OPENSEA_API_URL: api.url } }), {
    code: 'upstream_not_configured',
    message: /OPENSEA_API_KEY/,
  })
  await t.rejects(
    runInline(handler, handler.example, { providers: { OPENSEA_API_URL: api.url, OPENSEA_API_KEY: 'bad' } }),
    { code: 'upstream_failed' },
  )
  api.route(() => ({ body: 'oops' }))
  await t.rejects(
    runInline(handler, handler.example, { providers: { OPENSEA_API_URL: api.url, OPENSEA_API_KEY: 'k' } }),
    { code: 'upstream_failed' },
  )
  api.route(() => ({ body: { something: 1 } }))
  await t.rejects(
    runInline(handler, handler.example, { providers: { OPENSEA_API_URL: api.url, OPENSEA_API_KEY: 'k' } }),
    { code: 'upstream_failed', message: /without totals/ },
  )
  api.route(() => ({ status: 400, body: { errors: ['Invalid chain'] } }))
  t.match(
    await runInline(
      handler,
      { contractAddress: BAYC, chain: 'nochain' },
      { providers: { OPENSEA_API_URL: api.url, OPENSEA_API_KEY: 'k' } },
    ),
    { ok: false, status: 422, field: 'chain', message: /Invalid chain/ },
  )
})

import t from 'tap'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import { marketStandIn, type RecordedRequest } from '../../test/helpers/market-stand-in.js'
import { compileInputValidator } from '../../src/pool/input-validator.js'
import handler from './index.js'

// answers in the documented shape of https://docs.coingecko.com/v3.0.1/reference/simple-price
const simplePrice = {
  bitcoin: {
    usd: 67187.3358,
    usd_market_cap: 1317802988326.25,
    usd_24h_vol: 31260929299.52,
    usd_24h_change: 3.6379,
    eur: 62000.1,
    eur_market_cap: 1216000000000,
    eur_24h_vol: 28800000000,
    eur_24h_change: 3.5,
    last_updated_at: 1711356300,
  },
  ethereum: {
    usd: 3500.5,
    usd_market_cap: 420000000000,
    usd_24h_vol: 15000000000,
    usd_24h_change: -1.25,
    eur: 3230.2,
    eur_market_cap: null,
    eur_24h_vol: 13900000000,
    eur_24h_change: -1.3,
    last_updated_at: 1711356290,
  },
}
// https://docs.coingecko.com/v3.0.1/reference/simple-token-price: keyed by the lower-cased address
const usdcBase = '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913'
const tokenPrice = {
  [usdcBase.toLowerCase()]: {
    usd: 0.9998,
    usd_market_cap: 4100000000,
    usd_24h_vol: 520000000,
    usd_24h_change: 0.01,
    last_updated_at: 1711356000,
  },
}

function route(req: RecordedRequest) {
  if (req.path === '/api/v3/simple/price') {
    const ids = (req.query.get('ids') ?? '').split(',')
    return {
      body: Object.fromEntries(
        ids.filter((id) => id in simplePrice).map((id) => [id, simplePrice[id as keyof typeof simplePrice]]),
      ),
    }
  }
  if (req.path === '/api/v3/simple/token_price/base') return { body: tokenPrice }
  if (req.path.startsWith('/api/v3/simple/token_price/'))
    return { status: 404, body: { error: 'asset platform not found' } }
  return undefined
}

t.test('the example is valid', async (t) => {
  t.equal(compileInputValidator(handler).validate(structuredClone(handler.example), 'body'), null)
})

t.test('prices by coin id', async (t) => {
  const api = await marketStandIn(t, route)
  const providers = { COINGECKO_API_URL: `${api.url}/api/v3`, COINGECKO_API_KEY: 'demo-key-123' }
  const out = okBody(
    await runInline(
      handler,
      { ids: ['bitcoin', 'ethereum', 'no-such-coin'], vsCurrencies: ['usd', 'EUR'] },
      { providers },
    ),
  )
  t.equal(out.by, 'id')
  t.same(out.vsCurrencies, ['usd', 'eur'])
  t.same(out.prices[0], {
    id: 'bitcoin',
    found: true,
    quotes: {
      usd: { price: 67187.3358, marketCap: 1317802988326.25, volume24h: 31260929299.52, change24hPercent: 3.6379 },
      eur: { price: 62000.1, marketCap: 1216000000000, volume24h: 28800000000, change24hPercent: 3.5 },
    },
    lastUpdatedAt: '2024-03-25T08:45:00.000Z',
  })
  t.equal(out.prices[1].quotes.usd.change24hPercent, -1.25)
  t.equal(out.prices[1].quotes.eur.marketCap, null, 'a null figure stays null')
  t.same(out.prices[2], { id: 'no-such-coin', found: false, quotes: {}, lastUpdatedAt: null })

  const req = api.last()
  t.equal(req.path, '/api/v3/simple/price')
  t.equal(req.query.get('ids'), 'bitcoin,ethereum,no-such-coin')
  t.equal(req.query.get('vs_currencies'), 'usd,eur')
  for (const f of ['include_market_cap', 'include_24hr_vol', 'include_24hr_change', 'include_last_updated_at'])
    t.equal(req.query.get(f), 'true', f)
  t.equal(req.headers['x-cg-demo-api-key'], 'demo-key-123', 'a non-pro URL sends the demo key header')
  t.equal(req.headers['x-cg-pro-api-key'], undefined)
})

t.test('GET query-string input', async (t) => {
  const api = await marketStandIn(t, route)
  const out = okBody(
    await runInline(
      handler,
      { ids: 'bitcoin' },
      { from: 'query', providers: { COINGECKO_API_URL: `${api.url}/api/v3` } },
    ),
  )
  t.equal(out.prices.length, 1)
  t.equal(out.prices[0].quotes.usd.price, 67187.3358)
  t.equal(api.last().query.get('vs_currencies'), 'usd', 'default currency')
  t.equal(api.last().headers['x-cg-demo-api-key'], undefined, 'no key configured, no key header')
})

t.test('prices by contract address on Base', async (t) => {
  const api = await marketStandIn(t, route)
  const out = okBody(
    await runInline(
      handler,
      { contractAddresses: [usdcBase, '0x0000000000000000000000000000000000000001'] },
      { providers: { COINGECKO_API_URL: `${api.url}/api/v3` } },
    ),
  )
  t.equal(out.by, 'contract')
  t.equal(out.platform, 'base')
  t.same(out.prices[0], {
    address: usdcBase,
    found: true,
    quotes: { usd: { price: 0.9998, marketCap: 4100000000, volume24h: 520000000, change24hPercent: 0.01 } },
    lastUpdatedAt: '2024-03-25T08:40:00.000Z',
  })
  t.equal(out.prices[1].found, false)
  t.equal(api.last().path, '/api/v3/simple/token_price/base')
  t.equal(api.last().query.get('contract_addresses'), `${usdcBase},0x0000000000000000000000000000000000000001`)
})

t.test('an unknown platform is 422 on platform', async (t) => {
  const api = await marketStandIn(t, route)
  const out = await runInline(
    handler,
    { contractAddresses: [usdcBase], platform: 'nochain' },
    { providers: { COINGECKO_API_URL: api.url + '/api/v3' } },
  )
  t.match(out, { ok: false, status: 422, field: 'platform' })
})

t.test('a pro URL sends the key as x-cg-pro-api-key', async (t) => {
  const { coingeckoKeyHeader } = await import('../_shared/market-coingecko.js')
  t.equal(coingeckoKeyHeader('https://pro-api.coingecko.com/api/v3'), 'x-cg-pro-api-key')
  t.equal(coingeckoKeyHeader('https://api.coingecko.com/api/v3'), 'x-cg-demo-api-key')
})

t.test('bad input: 400 naming the field', async (t) => {
  const providers = { COINGECKO_API_URL: 'http://127.0.0.1:1' }
  t.match(
    await runInline(handler, {}, { providers }),
    { ok: false, status: 400, field: 'ids' },
    'neither ids nor addresses',
  )
  t.match(
    await runInline(handler, { ids: ['bitcoin'], contractAddresses: [usdcBase] }, { providers }),
    { ok: false, status: 400, field: 'contractAddresses' },
    'both',
  )
  t.match(await runInline(handler, { ids: [] }, { providers }), { ok: false, status: 400, field: 'ids' }, 'empty list')
  t.match(
    await runInline(handler, { ids: Array.from({ length: 31 }, (_, i) => `coin-${i}`) }, { providers }),
    { ok: false, status: 400, field: 'ids' },
    'too many',
  )
  t.match(await runInline(handler, { ids: ['Bit Coin'] }, { providers }), { ok: false, status: 400, field: 'ids.0' })
  t.match(await runInline(handler, { contractAddresses: ['0x1234'] }, { providers }), {
    ok: false,
    status: 400,
    field: 'contractAddresses.0',
  })
  t.match(
    await runInline(
      handler,
      { contractAddresses: ['So11111111111111111111111111111111111111112'], platform: 'base' },
      { providers },
    ),
    { ok: false, status: 400, field: 'contractAddresses' },
  )
  t.match(await runInline(handler, { ids: ['bitcoin'], vsCurrencies: ['us$'] }, { providers }), {
    ok: false,
    status: 400,
    field: 'vsCurrencies.0',
  })
  t.match(await runInline(handler, { ids: ['bitcoin'], extra: 1 }, { providers }), {
    ok: false,
    status: 400,
    field: 'extra',
  })
})

t.test('provider problems', async (t) => {
  await t.rejects(runInline(handler, handler.example, { providers: {} }), {
    name: 'HandlerUpstreamError',
    code: 'upstream_not_configured',
  })
  const api = await marketStandIn(t, () => ({ status: 500, body: { error: 'internal' } }))
  await t.rejects(runInline(handler, handler.example, { providers: { COINGECKO_API_URL: api.url } }), {
    code: 'upstream_failed',
  })
  api.route(() => ({ status: 429, body: { status: { error_code: 429, error_message: 'rate limited' } } }))
  await t.rejects(runInline(handler, handler.example, { providers: { COINGECKO_API_URL: api.url } }), {
    code: 'upstream_failed',
  })
  api.route(() => ({ body: '<html>gateway</html>', contentType: 'text/html' }))
  await t.rejects(runInline(handler, handler.example, { providers: { COINGECKO_API_URL: api.url } }), {
    code: 'upstream_failed',
    message: /not JSON/,
  })
  const err = await runInline(handler, handler.example, {
    providers: { COINGECKO_API_URL: api.url, COINGECKO_API_KEY: 'secret-key-9' },
  }).catch((e: Error) => e)
  t.notMatch((err as Error).message, /secret-key-9/, 'the key stays out of the message')
})

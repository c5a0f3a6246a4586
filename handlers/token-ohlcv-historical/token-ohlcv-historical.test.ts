import t from 'tap'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import { marketStandIn, type RecordedRequest } from '../../test/helpers/market-stand-in.js'
import { compileInputValidator } from '../../src/pool/input-validator.js'
import handler from './index.js'

// https://docs.coingecko.com/v3.0.1/reference/coins-id-ohlc: [time ms (close), open, high, low, close]
const ohlc = [
  [1709409600000, 3400.5, 3420, 3390.25, 3410],
  [1709395200000, 3380, 3405.75, 3370, 3400.5],
]
// https://docs.coingecko.com/v3.0.1/reference/contract-address-market-chart
const H = 3_600_000
const t0 = 1709395200000 // 2024-03-02T16:00:00Z, a 4-hour boundary
const chart = {
  prices: [
    [t0 + 0 * H, 1.0],
    [t0 + 1 * H, 1.3],
    [t0 + 2 * H, 0.9],
    [t0 + 3 * H, 1.1],
    [t0 + 4 * H, 1.2],
    [t0 + 5 * H, 1.25],
  ],
  market_caps: [[t0, 1000]],
  total_volumes: [
    [t0 + 0 * H, 500],
    [t0 + 3 * H, 530],
    [t0 + 5 * H, 610],
  ],
}
const token = '0x4200000000000000000000000000000000000042'

function route(req: RecordedRequest) {
  if (req.path === '/coins/ethereum/ohlc') return { body: ohlc }
  if (req.path === `/coins/base/contract/${token}/market_chart`) return { body: chart }
  if (req.path.startsWith('/coins/')) return { status: 404, body: { error: 'coin not found' } }
  return undefined
}

t.test('the example is valid', async (t) => {
  t.equal(compileInputValidator(handler).validate(structuredClone(handler.example), 'body'), null)
})

t.test("by coin id: CoinGecko's own candles, oldest first", async (t) => {
  const api = await marketStandIn(t, route)
  const out = okBody(
    await runInline(
      handler,
      { id: 'ethereum', days: 1 },
      { providers: { COINGECKO_API_URL: api.url, COINGECKO_API_KEY: 'k1' } },
    ),
  )
  t.match(out, {
    by: 'id',
    id: 'ethereum',
    found: true,
    method: 'coingecko-ohlc',
    interval: '30m',
    vsCurrency: 'usd',
    days: 1,
  })
  t.same(out.candles, [
    {
      time: '2024-03-02T16:00:00.000Z',
      timestamp: 1709395200000,
      open: 3380,
      high: 3405.75,
      low: 3370,
      close: 3400.5,
      volume24h: null,
    },
    {
      time: '2024-03-02T20:00:00.000Z',
      timestamp: 1709409600000,
      open: 3400.5,
      high: 3420,
      low: 3390.25,
      close: 3410,
      volume24h: null,
    },
  ])
  const req = api.last()
  t.equal(req.path, '/coins/ethereum/ohlc')
  t.equal(req.query.get('vs_currency'), 'usd')
  t.equal(req.query.get('days'), '1')
  t.equal(req.headers['x-cg-demo-api-key'], 'k1')
})

t.test('by contract: candles built from price samples', async (t) => {
  const api = await marketStandIn(t, route)
  const out = okBody(
    await runInline(
      handler,
      { contractAddress: token, days: '30', vsCurrency: 'EUR' },
      { from: 'query', providers: { COINGECKO_API_URL: api.url } },
    ),
  )
  t.match(out, {
    by: 'contract',
    platform: 'base',
    address: token,
    found: true,
    method: 'built-from-price-samples',
    interval: '4h',
    vsCurrency: 'eur',
    days: 30,
  })
  t.same(out.candles, [
    {
      time: '2024-03-02T20:00:00.000Z',
      timestamp: t0 + 4 * H,
      open: 1.0,
      high: 1.3,
      low: 0.9,
      close: 1.1,
      volume24h: 530,
    },
    {
      time: '2024-03-03T00:00:00.000Z',
      timestamp: t0 + 8 * H,
      open: 1.2,
      high: 1.25,
      low: 1.2,
      close: 1.25,
      volume24h: 610,
    },
  ])
  t.equal(api.last().path, `/coins/base/contract/${token}/market_chart`)
  t.equal(api.last().query.get('vs_currency'), 'eur')
  t.equal(api.last().query.get('days'), '30')
})

t.test('unknown coin or contract: found false', async (t) => {
  const api = await marketStandIn(t, route)
  const providers = { COINGECKO_API_URL: api.url }
  t.match(okBody(await runInline(handler, { id: 'no-such-coin' }, { providers })), {
    found: false,
    candles: [],
    by: 'id',
  })
  t.match(
    okBody(await runInline(handler, { contractAddress: '0x0000000000000000000000000000000000000001' }, { providers })),
    { found: false, candles: [], by: 'contract' },
  )
})

t.test('bad input: 400 naming the field', async (t) => {
  const providers = { COINGECKO_API_URL: 'http://127.0.0.1:1' }
  t.match(await runInline(handler, {}, { providers }), { ok: false, status: 400, field: 'id' })
  t.match(await runInline(handler, { id: 'bitcoin', contractAddress: token }, { providers }), {
    ok: false,
    status: 400,
    field: 'contractAddress',
  })
  t.match(await runInline(handler, { id: 'bitcoin', days: 3 }, { providers }), {
    ok: false,
    status: 400,
    field: 'days',
  })
  t.match(await runInline(handler, { id: 'BTC USD' }, { providers }), { ok: false, status: 400, field: 'id' })
  t.match(await runInline(handler, { contractAddress: '0xabc' }, { providers }), {
    ok: false,
    status: 400,
    field: 'contractAddress',
  })
  t.match(await runInline(handler, { contractAddress: 'So11111111111111111111111111111111111111112' }, { providers }), {
    ok: false,
    status: 400,
    field: 'contractAddress',
  })
})

t.test('provider problems', async (t) => {
  await t.rejects(runInline(handler, handler.example, { providers: {} }), { code: 'upstream_not_configured' })
  const api = await marketStandIn(t, () => ({ status: 502, body: 'bad gateway' }))
  await t.rejects(runInline(handler, handler.example, { providers: { COINGECKO_API_URL: api.url } }), {
    code: 'upstream_failed',
  })
  api.route(() => ({ body: { unexpected: true } }))
  await t.rejects(runInline(handler, handler.example, { providers: { COINGECKO_API_URL: api.url } }), {
    code: 'upstream_failed',
    message: /not an array/,
  })
  await t.rejects(runInline(handler, { contractAddress: token }, { providers: { COINGECKO_API_URL: api.url } }), {
    code: 'upstream_failed',
    message: /without prices/,
  })
})

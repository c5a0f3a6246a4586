import t from 'tap'
import { compileInputValidator } from '../../src/pool/input-validator.js'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import { hyperliquidStandIn, perpMetaAndCtxs, startJsonStandIn } from '../../test/helpers/hyperliquid-stand-in.js'
import handler from './index.js'

const history = [
  { coin: 'BTC', fundingRate: '0.00001', premium: '0.0001', time: 1_700_003_600_000 },
  { coin: 'BTC', fundingRate: '0.00003', premium: '0.0003', time: 1_700_000_000_000 },
]

t.test('the example is valid', async (t) => {
  t.equal(compileInputValidator(handler).validate(structuredClone(handler.example), 'body'), null)
})

t.test('one coin: live figures and its funding history', async (t) => {
  const hl = await hyperliquidStandIn(t, { metaAndAssetCtxs: perpMetaAndCtxs, fundingHistory: history })
  const out = okBody(
    await runInline(
      handler,
      { coin: 'btc', historyHours: '48' },
      { from: 'query', providers: { HYPERLIQUID_API_URL: hl.url } },
    ),
  )
  t.equal(out.venue, 'hyperliquid')
  t.equal(out.markets.length, 1)
  t.match(out.markets[0], {
    coin: 'BTC',
    fundingRateHourly: 0.0000125,
    fundingRateAnnualized: 0.1095,
    fundingAnnualizedPercent: 10.95,
    premium: 0.00031,
    markPx: 100010,
    oraclePx: 100000,
    midPx: 100005,
    openInterest: 30000.5,
    openInterestUsd: 3000350005,
    dayNotionalVolumeUsd: 2500000000,
    maxLeverage: 40,
  })
  const h = out.history
  t.equal(h.count, 2)
  t.same(
    h.entries.map((e: any) => e.fundingRate),
    [0.00003, 0.00001],
    'oldest first',
  )
  t.equal(h.entries[0].time, new Date(1_700_000_000_000).toISOString())
  t.equal(h.averageHourly, 0.00002)
  t.equal(h.averageAnnualized, 0.1752)
  // the request: the canonical coin name and a 48 h window
  const req = hl.requests.find((r) => r.body.type === 'fundingHistory')!
  t.equal(req.method, 'POST')
  t.equal(req.path, '/info')
  t.match(req.headers['content-type'], /application\/json/)
  t.equal(req.body.coin, 'BTC')
  t.equal(req.body.endTime - req.body.startTime, 48 * 3_600_000)
  t.equal(Date.parse(h.endTime) - Date.parse(h.startTime), 48 * 3_600_000)
})

t.test('market list: sorted, limited, delisted left out', async (t) => {
  const hl = await hyperliquidStandIn(t, { metaAndAssetCtxs: perpMetaAndCtxs })
  const providers = { HYPERLIQUID_API_URL: hl.url + '/' }
  const highest = okBody(await runInline(handler, {}, { providers }))
  t.same(
    highest.markets.map((m: any) => m.coin),
    ['kPEPE', 'BTC', 'ETH'],
  )
  t.equal(highest.marketsTotal, 3)
  t.equal(highest.history, null)
  t.equal(highest.markets[0].fundingRateAnnualized, 0.876)
  t.equal(highest.markets[2].fundingAnnualizedPercent, -17.52)
  const lowest = okBody(await runInline(handler, { sort: 'lowest', limit: 1 }, { providers }))
  t.same(
    lowest.markets.map((m: any) => m.coin),
    ['ETH'],
  )
  const oi = okBody(await runInline(handler, { sort: 'openInterest', includeDelisted: true }, { providers }))
  t.same(
    oi.markets.map((m: any) => m.coin),
    ['BTC', 'ETH', 'kPEPE', 'OLD'],
  )
  t.match(oi.markets[3], { coin: 'OLD', isDelisted: true, premium: null, midPx: null })
  t.equal(hl.requests.length, 3, 'one metaAndAssetCtxs call each, no history')
})

t.test('an unknown coin is a 422 on coin', async (t) => {
  const hl = await hyperliquidStandIn(t, { metaAndAssetCtxs: perpMetaAndCtxs })
  t.match(await runInline(handler, { coin: 'NOPE' }, { providers: { HYPERLIQUID_API_URL: hl.url } }), {
    ok: false,
    status: 422,
    field: 'coin',
  })
})

t.test('bad input names the field', async (t) => {
  const providers = { HYPERLIQUID_API_URL: 'http://127.0.0.1:1' }
  t.match(await runInline(handler, { coin: 'BTC-USD' }, { providers }), { ok: false, status: 400, field: 'coin' })
  t.match(await runInline(handler, { coin: '' }, { providers }), { ok: false, status: 400, field: 'coin' })
  t.match(await runInline(handler, { coin: 'BTC', historyHours: 481 }, { providers }), {
    ok: false,
    status: 400,
    field: 'historyHours',
  })
  t.match(await runInline(handler, { limit: 0 }, { providers }), { ok: false, status: 400, field: 'limit' })
  t.match(await runInline(handler, { sort: 'random' }, { providers }), { ok: false, status: 400, field: 'sort' })
  t.match(await runInline(handler, { extra: 1 }, { providers }), { ok: false, status: 400, field: 'extra' })
})

t.test('provider problems', async (t) => {
  await t.rejects(runInline(handler, { coin: 'BTC' }, { providers: {} }), { code: 'upstream_not_configured' })
  const down = await startJsonStandIn(t, () => ({ status: 500, raw: 'internal error' }))
  await t.rejects(runInline(handler, { coin: 'BTC' }, { providers: { HYPERLIQUID_API_URL: down.url } }), {
    code: 'upstream_failed',
  })
  const garbage = await startJsonStandIn(t, () => ({ status: 200, raw: '<html>' }))
  await t.rejects(runInline(handler, {}, { providers: { HYPERLIQUID_API_URL: garbage.url } }), {
    code: 'upstream_failed',
  })
  const wrongShape = await hyperliquidStandIn(t, { metaAndAssetCtxs: { universe: [] } })
  await t.rejects(runInline(handler, {}, { providers: { HYPERLIQUID_API_URL: wrongShape.url } }), {
    code: 'upstream_failed',
    message: /unexpected shape/,
  })
})

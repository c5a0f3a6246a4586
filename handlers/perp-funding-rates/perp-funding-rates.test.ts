import t from 'tap'
import { compileInputValidator } from '../../src/pool/input-validator.js'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import {
  dydxStandIn,
  hyperliquidStandIn,
  perpMetaAndCtxs,
  startJsonStandIn,
} from '../../test/helpers/hyperliquid-stand-in.js'
import handler from './index.js'

async function venues(t: { teardown(fn: () => unknown): void }) {
  const hl = await hyperliquidStandIn(t, { metaAndAssetCtxs: perpMetaAndCtxs })
  const dydx = await dydxStandIn(t)
  return { hl, dydx, providers: { HYPERLIQUID_API_URL: hl.url, DYDX_INDEXER_URL: dydx.url } }
}

t.test('the example is valid', async (t) => {
  t.equal(compileInputValidator(handler).validate(structuredClone(handler.example), 'body'), null)
})

t.test('both venues, matched by base asset', async (t) => {
  const { hl, dydx, providers } = await venues(t)
  const out = okBody(await runInline(handler, {}, { providers }))
  t.same(
    hl.requests.map((r) => r.body),
    [{ type: 'metaAndAssetCtxs' }],
  )
  t.same(
    dydx.requests.map((r) => [r.method, r.path]),
    [['GET', '/v4/perpetualMarkets']],
  )
  t.same(
    out.venues,
    [
      { venue: 'hyperliquid', status: 'ok', markets: 3 },
      { venue: 'dydx', status: 'ok', markets: 4 },
    ],
    'delisted and non-active markets left out',
  )
  t.equal(out.partial, false)
  t.same(
    out.coins.map((c: any) => c.coin),
    ['PEPE', 'ETH', 'BTC', 'SOL'],
    'highest rate on any venue first',
  )
  const btc = out.coins.find((c: any) => c.coin === 'BTC')
  t.same(btc.hyperliquid, {
    market: 'BTC',
    baseUnits: 1,
    fundingRateHourly: 0.0000125,
    fundingRateAnnualized: 0.1095,
    fundingAnnualizedPercent: 10.95,
    markPx: 100010,
    oraclePx: 100000,
    openInterestUsd: 3000350005,
    dayVolumeUsd: 2500000000,
  })
  t.same(btc.dydx, {
    market: 'BTC-USD',
    baseUnits: 1,
    fundingRateHourly: 0.00001,
    fundingRateAnnualized: 0.0876,
    fundingAnnualizedPercent: 8.76,
    markPx: null,
    oraclePx: 100020.5,
    openInterestUsd: 100070510.25,
    dayVolumeUsd: 500000000.5,
  })
  const pepe = out.coins.find((c: any) => c.coin === 'PEPE')
  t.equal(pepe.hyperliquid.market, 'kPEPE', 'kPEPE is matched to PEPE')
  t.equal(pepe.hyperliquid.baseUnits, 1000)
  t.equal(pepe.dydx.fundingRateAnnualized, -0.438)
  t.equal(out.coins.find((c: any) => c.coin === 'SOL').hyperliquid, null)
  t.notOk(out.coins.some((c: any) => c.coin === 'LUNA' || c.coin === 'OLD'))
})

t.test('asked coins, sorting, not found', async (t) => {
  const { providers } = await venues(t)
  const out = okBody(await runInline(handler, { coins: 'eth', sort: 'lowest' }, { from: 'query', providers }))
  t.same(
    out.coins.map((c: any) => c.coin),
    ['ETH'],
  )
  const some = okBody(await runInline(handler, { coins: ['BTC', 'ETH', 'DOGE'], sort: 'lowest' }, { providers }))
  t.same(
    some.coins.map((c: any) => c.coin),
    ['ETH', 'BTC'],
    'ETH has -0.00002 on Hyperliquid',
  )
  t.same(some.notFound, ['DOGE'])
  const byName = okBody(await runInline(handler, { sort: 'coin', limit: 2 }, { providers }))
  t.same(
    byName.coins.map((c: any) => c.coin),
    ['BTC', 'ETH'],
  )
  t.equal(byName.coinsMatched, 4)
})

t.test('one venue failing: a partial answer that says so', async (t) => {
  const hl = await hyperliquidStandIn(t, { metaAndAssetCtxs: perpMetaAndCtxs })
  const down = await startJsonStandIn(t, () => ({ status: 503, raw: 'maintenance' }))
  const out = okBody(
    await runInline(
      handler,
      { coins: ['BTC'] },
      { providers: { HYPERLIQUID_API_URL: hl.url, DYDX_INDEXER_URL: down.url } },
    ),
  )
  t.equal(out.partial, true)
  t.match(out.venues[1], { venue: 'dydx', status: 'failed', markets: 0, error: /HTTP 503/ })
  t.match(out.coins[0], { coin: 'BTC', dydx: null, hyperliquid: { fundingRateHourly: 0.0000125 } })
  const garbage = await dydxStandIn(t, { markets: null })
  const out2 = okBody(
    await runInline(handler, {}, { providers: { HYPERLIQUID_API_URL: hl.url, DYDX_INDEXER_URL: garbage.url + '/' } }),
  )
  t.match(out2.venues[1], { venue: 'dydx', status: 'failed', error: /unexpected shape/ })
  const out3 = okBody(
    await runInline(
      handler,
      {},
      { providers: { HYPERLIQUID_API_URL: down.url, DYDX_INDEXER_URL: (await dydxStandIn(t)).url } },
    ),
  )
  t.match(out3.venues, [
    { venue: 'hyperliquid', status: 'failed', markets: 0 },
    { venue: 'dydx', status: 'ok', markets: 4 },
  ])
  t.equal(out3.coins.find((c: any) => c.coin === 'BTC').hyperliquid, null)
})

t.test('every venue failing: 502', async (t) => {
  const down = await startJsonStandIn(t, () => ({ status: 500, raw: 'no' }))
  await t.rejects(
    runInline(handler, {}, { providers: { HYPERLIQUID_API_URL: down.url, DYDX_INDEXER_URL: down.url } }),
    { code: 'upstream_failed', message: /every venue failed/ },
  )
})

t.test('unconfigured: 503, either setting missing', async (t) => {
  await t.rejects(runInline(handler, {}, { providers: {} }), { code: 'upstream_not_configured' })
  await t.rejects(runInline(handler, {}, { providers: { HYPERLIQUID_API_URL: 'http://127.0.0.1:1' } }), {
    code: 'upstream_not_configured',
    message: /DYDX_INDEXER_URL/,
  })
})

t.test('bad input names the field', async (t) => {
  const providers = { HYPERLIQUID_API_URL: 'http://127.0.0.1:1', DYDX_INDEXER_URL: 'http://127.0.0.1:1' }
  t.match(await runInline(handler, { coins: [] }, { providers }), { ok: false, status: 400, field: 'coins' })
  t.match(await runInline(handler, { coins: ['BTC-USD'] }, { providers }), { ok: false, status: 400, field: 'coins.0' })
  t.match(await runInline(handler, { coins: Array.from({ length: 51 }, (_, i) => `C${i}`) }, { providers }), {
    ok: false,
    status: 400,
    field: 'coins',
  })
  t.match(await runInline(handler, { sort: 'x' }, { providers }), { ok: false, status: 400, field: 'sort' })
})

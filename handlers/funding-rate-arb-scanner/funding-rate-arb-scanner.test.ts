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

t.test('spreads for coins on both venues, widest first', async (t) => {
  const { hl, dydx, providers } = await venues(t)
  const out = okBody(await runInline(handler, {}, { providers }))
  t.equal(hl.requests.length, 1)
  t.equal(dydx.requests[0]!.path, '/v4/perpetualMarkets')
  t.equal(out.coinsOnBothVenues, 3, 'BTC, ETH, PEPE (SOL is only on dYdX)')
  t.match(out.notIncluded, /fees.*slippage/)
  t.same(
    out.opportunities.map((o: any) => o.coin),
    ['PEPE', 'ETH', 'BTC'],
  )
  const [pepe, eth, btc] = out.opportunities
  // PEPE: Hyperliquid kPEPE 0.0001/h, dYdX -0.00005/h → long dYdX, short Hyperliquid, 0.00015/h
  t.match(pepe, {
    longVenue: 'dydx',
    longMarket: 'PEPE-USD',
    longRateHourly: -0.00005,
    shortVenue: 'hyperliquid',
    shortMarket: 'kPEPE',
    shortRateHourly: 0.0001,
    spreadHourly: 0.00015,
    spreadAnnualized: 1.314,
    spreadAnnualizedPercent: 131.4,
  })
  t.same(pepe.prices, { hyperliquidMarkPx: 0.0000126, dydxOraclePx: 0.0000126, gapPercent: 0 }, 'kPEPE price per PEPE')
  t.match(eth, { longVenue: 'hyperliquid', shortVenue: 'dydx', spreadHourly: 0.00004, spreadAnnualizedPercent: 35.04 })
  t.match(btc, {
    longVenue: 'dydx',
    shortVenue: 'hyperliquid',
    spreadHourly: 0.0000025,
    spreadAnnualized: 0.0219,
    spreadAnnualizedPercent: 2.19,
  })
  t.equal(btc.prices.gapPercent, Number((((100010 - 100020.5) / 100020.5) * 100).toPrecision(12)))
})

t.test('threshold, coins, limit', async (t) => {
  const { providers } = await venues(t)
  const min = okBody(await runInline(handler, { minSpreadAnnualizedPercent: '5' }, { from: 'query', providers }))
  t.same(
    min.opportunities.map((o: any) => o.coin),
    ['PEPE', 'ETH'],
  )
  t.equal(min.opportunitiesFound, 2)
  const some = okBody(await runInline(handler, { coins: ['btc', 'sol'] }, { providers }))
  t.same(
    some.opportunities.map((o: any) => o.coin),
    ['BTC'],
    'SOL is not on both venues',
  )
  const one = okBody(await runInline(handler, { limit: 1 }, { providers }))
  t.equal(one.opportunities.length, 1)
  t.equal(one.opportunitiesFound, 3)
})

t.test('a venue failing: 502 naming it', async (t) => {
  const hl = await hyperliquidStandIn(t, { metaAndAssetCtxs: perpMetaAndCtxs })
  const down = await startJsonStandIn(t, () => ({ status: 500, raw: 'no' }))
  await t.rejects(runInline(handler, {}, { providers: { HYPERLIQUID_API_URL: hl.url, DYDX_INDEXER_URL: down.url } }), {
    code: 'upstream_failed',
    message: /dydx: dYdX indexer answered HTTP 500/,
  })
  await t.rejects(runInline(handler, {}, { providers: {} }), { code: 'upstream_not_configured' })
})

t.test('bad input names the field', async (t) => {
  const providers = { HYPERLIQUID_API_URL: 'http://127.0.0.1:1', DYDX_INDEXER_URL: 'http://127.0.0.1:1' }
  t.match(await runInline(handler, { minSpreadAnnualizedPercent: -1 }, { providers }), {
    ok: false,
    status: 400,
    field: 'minSpreadAnnualizedPercent',
  })
  t.match(await runInline(handler, { coins: ['B T C'] }, { providers }), { ok: false, status: 400, field: 'coins.0' })
  t.match(await runInline(handler, { limit: 0 }, { providers }), { ok: false, status: 400, field: 'limit' })
})

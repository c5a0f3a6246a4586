import t from 'tap'
import { compileInputValidator } from '../../src/pool/input-validator.js'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import { clearinghouseFixture, hyperliquidStandIn, startJsonStandIn } from '../../test/helpers/hyperliquid-stand-in.js'
import handler from './index.js'

const USER = '0xAbCdEf0123456789aBcDeF0123456789AbCdEf01'

const answers = {
  clearinghouseState: clearinghouseFixture([
    ['ETH', '-2.5', '1000.0', { liquidationPx: '4400.5', entryPx: '3900.0' }],
    ['BTC', '0.015', '1500.0'],
  ]),
  spotClearinghouseState: {
    balances: [
      { coin: 'USDC', token: 0, hold: '0.0', total: '1234.56', entryNtl: '0.0' },
      { coin: 'HYPE', token: 150, hold: '1.0', total: '10.5', entryNtl: '250.0' },
    ],
  },
  openOrders: [
    { coin: 'BTC', limitPx: '90000.0', oid: 1, side: 'B', sz: '0.01', timestamp: 1 },
    { coin: 'BTC', limitPx: '110000.0', oid: 2, side: 'A', sz: '0.01', timestamp: 2 },
    { coin: 'ETH', limitPx: '3000.0', oid: 3, side: 'B', sz: '1.0', timestamp: 3 },
  ],
}

t.test('the example is valid', async (t) => {
  t.equal(compileInputValidator(handler).validate(structuredClone(handler.example), 'body'), null)
})

t.test('positions, margin, spot and open orders', async (t) => {
  const hl = await hyperliquidStandIn(t, answers)
  const out = okBody(
    await runInline(handler, { address: USER }, { from: 'query', providers: { HYPERLIQUID_API_URL: hl.url } }),
  )
  t.same(hl.requests.map((r) => r.body.type).sort(), ['clearinghouseState', 'openOrders', 'spotClearinghouseState'])
  for (const r of hl.requests) t.equal(r.body.user, USER.toLowerCase(), `${r.body.type} asks for the lower-cased user`)
  t.match(out, {
    venue: 'hyperliquid',
    address: USER.toLowerCase(),
    time: '2025-08-06T03:29:34.231Z',
    hasActivity: true,
    withdrawableUsd: 9750,
    crossMaintenanceMarginUsedUsd: 40,
    positionsCount: 2,
  })
  t.same(out.marginSummary, {
    accountValueUsd: 10000,
    totalNotionalPositionUsd: 2500,
    totalRawUsd: 7500,
    totalMarginUsedUsd: 250,
  })
  t.same(
    out.positions.map((p: any) => p.coin),
    ['BTC', 'ETH'],
    'largest value first',
  )
  t.same(out.positions[1], {
    coin: 'ETH',
    side: 'short',
    size: -2.5,
    entryPx: 3900,
    positionValueUsd: 1000,
    unrealizedPnlUsd: 12.5,
    returnOnEquity: 0.05,
    liquidationPx: 4400.5,
    marginUsedUsd: 250,
    leverage: { type: 'cross', value: 10 },
    maxLeverage: 40,
    cumulativeFundingUsd: { allTime: -3.25, sinceOpen: -1.5 },
  })
  t.match(out.positions[0], { side: 'long', size: 0.015, liquidationPx: null })
  t.same(out.spot.balances[1], { coin: 'HYPE', token: 150, total: 10.5, hold: 1, entryNotionalUsd: 250 })
  t.same(out.openOrders, { count: 3, buy: 2, sell: 1, byCoin: { BTC: 2, ETH: 1 } })
})

t.test('spot and orders can be skipped', async (t) => {
  const hl = await hyperliquidStandIn(t, answers)
  const out = okBody(
    await runInline(
      handler,
      { address: USER, includeSpot: false, includeOpenOrders: 'false' },
      { from: 'query', providers: { HYPERLIQUID_API_URL: hl.url } },
    ),
  )
  t.same(
    hl.requests.map((r) => r.body.type),
    ['clearinghouseState'],
  )
  t.equal(out.spot, null)
  t.equal(out.openOrders, null)
})

t.test('an address with no account: empty, not an error', async (t) => {
  const hl = await hyperliquidStandIn(t, {
    clearinghouseState: clearinghouseFixture([], '0.0'),
    spotClearinghouseState: { balances: [] },
    openOrders: [],
  })
  const out = okBody(await runInline(handler, { address: USER }, { providers: { HYPERLIQUID_API_URL: hl.url } }))
  t.match(out, {
    hasActivity: false,
    positionsCount: 0,
    positions: [],
    spot: { balances: [] },
    openOrders: { count: 0 },
  })
})

t.test('bad input names the field', async (t) => {
  const providers = { HYPERLIQUID_API_URL: 'http://127.0.0.1:1' }
  t.match(await runInline(handler, {}, { providers }), { ok: false, status: 400, field: 'address' })
  t.match(await runInline(handler, { address: '0x1234' }, { providers }), { ok: false, status: 400, field: 'address' })
  t.match(await runInline(handler, { address: USER + '00' }, { providers }), {
    ok: false,
    status: 400,
    field: 'address',
  })
  t.match(await runInline(handler, { address: USER, includeSpot: 'maybe' }, { providers }), {
    ok: false,
    status: 400,
    field: 'includeSpot',
  })
})

t.test('provider problems', async (t) => {
  await t.rejects(runInline(handler, { address: USER }, { providers: {} }), { code: 'upstream_not_configured' })
  const down = await startJsonStandIn(t, () => ({ status: 500, raw: 'oops' }))
  await t.rejects(runInline(handler, { address: USER }, { providers: { HYPERLIQUID_API_URL: down.url } }), {
    code: 'upstream_failed',
  })
  const wrong = await hyperliquidStandIn(t, { ...answers, spotClearinghouseState: { nothing: true } })
  await t.rejects(runInline(handler, { address: USER }, { providers: { HYPERLIQUID_API_URL: wrong.url } }), {
    code: 'upstream_failed',
    message: /spotClearinghouseState/,
  })
})

t.test('null and non-object spot balances and open orders are left out, not a crash', async (t) => {
  const hl = await hyperliquidStandIn(t, {
    ...answers,
    spotClearinghouseState: { balances: [null, 'USDC', { token: 3 }, answers.spotClearinghouseState.balances[1]] },
    openOrders: [null, 7, answers.openOrders[0], { side: 'A' }],
  })
  const out = okBody(await runInline(handler, { address: USER }, { providers: { HYPERLIQUID_API_URL: hl.url } }))
  t.same(
    out.spot.balances.map((b: any) => b.coin),
    ['HYPE'],
  )
  t.same(out.openOrders, { count: 1, buy: 1, sell: 0, byCoin: { BTC: 1 } })
})

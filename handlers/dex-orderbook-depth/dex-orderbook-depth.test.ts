import t from 'tap'
import { compileInputValidator } from '../../src/pool/input-validator.js'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import {
  hyperliquidStandIn,
  spotMetaAndCtxsFixture,
  startJsonStandIn,
} from '../../test/helpers/hyperliquid-stand-in.js'
import handler from './index.js'

const r12 = (x: number) => Number(x.toPrecision(12))
const lv = (px: number, sz: number, n = 1) => ({ px: String(px), sz: String(sz), n })

// mid 100: bids 99.95×1, 99.6×2, 99×3, 98.5×4; asks 100.05×1, 100.4×1, 101.5×2
const book = (coin: string) => ({
  coin,
  time: 1_754_450_974_231,
  levels: [
    [lv(99.95, 1), lv(99.6, 2), lv(99, 3), lv(98.5, 4)],
    [lv(100.05, 1), lv(100.4, 1), lv(101.5, 2)],
  ],
})
const answers = { l2Book: (b: any) => book(b.coin), spotMeta: spotMetaAndCtxsFixture[0] }

t.test('the example is valid', async (t) => {
  t.equal(compileInputValidator(handler).validate(structuredClone(handler.example), 'body'), null)
})

t.test('perp: the four default bands', async (t) => {
  const hl = await hyperliquidStandIn(t, answers)
  const out = okBody(await runInline(handler, { market: 'BTC' }, { providers: { HYPERLIQUID_API_URL: hl.url } }))
  t.same(
    hl.requests.map((r) => r.body),
    [{ type: 'l2Book', coin: 'BTC' }],
    'full precision, no spotMeta for a perp',
  )
  t.match(out, {
    venue: 'hyperliquid',
    marketType: 'perp',
    coin: 'BTC',
    pair: null,
    mid: 100,
    bestBid: 99.95,
    bestAsk: 100.05,
    levelsSent: { bids: 4, asks: 3 },
  })
  t.same(
    out.bands.map((b: any) => b.percent),
    [0.1, 0.5, 1, 2],
  )
  t.same(out.bands[0], {
    percent: 0.1,
    bidFloorPx: 99.9,
    askCeilingPx: 100.1,
    bidSize: 1,
    askSize: 1,
    bidNotional: 99.95,
    askNotional: 100.05,
    imbalance: r12(-0.1 / 200),
    complete: true,
  })
  t.match(out.bands[1], {
    bidSize: 3,
    askSize: 2,
    bidNotional: 299.15,
    askNotional: 200.45,
    imbalance: r12(98.7 / 499.6),
  })
  t.match(
    out.bands[2],
    { bidFloorPx: 99, bidSize: 6, bidNotional: 596.15, askSize: 2 },
    'a level on the band edge counts',
  )
  t.match(out.bands[3], {
    bidSize: 10,
    askSize: 4,
    bidNotional: 990.15,
    askNotional: 403.45,
    imbalance: r12((990.15 - 403.45) / (990.15 + 403.45)),
    complete: true,
  })
})

t.test('spot pair resolved through spotMeta; custom bands', async (t) => {
  const hl = await hyperliquidStandIn(t, answers)
  const out = okBody(
    await runInline(
      handler,
      { market: 'hype/usdc', bandsPercent: '[1,0.25]' },
      { from: 'query', providers: { HYPERLIQUID_API_URL: hl.url } },
    ),
  )
  t.same(
    hl.requests.map((r) => r.body),
    [{ type: 'spotMeta' }, { type: 'l2Book', coin: '@107' }],
  )
  t.match(out, { marketType: 'spot', coin: '@107', pair: 'HYPE/USDC' })
  t.same(
    out.bands.map((b: any) => b.percent),
    [0.25, 1],
    'sorted',
  )
  const byName = okBody(await runInline(handler, { market: '@107' }, { providers: { HYPERLIQUID_API_URL: hl.url } }))
  t.equal(byName.pair, 'HYPE/USDC')
  t.match(await runInline(handler, { market: 'NOPE/USDC' }, { providers: { HYPERLIQUID_API_URL: hl.url } }), {
    ok: false,
    status: 422,
    field: 'market',
  })
  t.match(
    await runInline(
      handler,
      { market: 'HYPE/USDC', marketType: 'perp' },
      { providers: { HYPERLIQUID_API_URL: hl.url } },
    ),
    { ok: false, status: 400, field: 'market' },
  )
})

t.test('20 levels all inside a band: marked incomplete', async (t) => {
  const bids = Array.from({ length: 20 }, (_, i) => lv(99.99 - i * 0.01, 1))
  const asks = Array.from({ length: 20 }, (_, i) => lv(100.01 + i * 0.01, 1))
  const hl = await hyperliquidStandIn(t, { l2Book: { coin: 'ETH', time: 1, levels: [bids, asks] } })
  const out = okBody(
    await runInline(handler, { market: 'ETH', bandsPercent: [0.1, 1] }, { providers: { HYPERLIQUID_API_URL: hl.url } }),
  )
  t.match(out.bands[0], { percent: 0.1, bidSize: 10, askSize: 10, complete: true })
  t.match(out.bands[1], {
    percent: 1,
    bidSize: 20,
    askSize: 20,
    bidNotional: 1997.9,
    askNotional: 2002.1,
    imbalance: -0.00105,
    complete: false,
  })
})

t.test('an empty book and an unknown coin', async (t) => {
  const hl = await hyperliquidStandIn(t, {
    l2Book: (b: any) => (b.coin === 'NOPE' ? null : { coin: b.coin, time: 1, levels: [[], []] }),
  })
  const empty = okBody(
    await runInline(handler, { market: 'X', bandsPercent: [1] }, { providers: { HYPERLIQUID_API_URL: hl.url } }),
  )
  t.match(empty, { mid: null, bands: [{ percent: 1, bidSize: null, imbalance: null, complete: false }] })
  t.match(await runInline(handler, { market: 'NOPE' }, { providers: { HYPERLIQUID_API_URL: hl.url } }), {
    ok: false,
    status: 422,
    field: 'market',
  })
})

t.test('bad input names the field', async (t) => {
  const providers = { HYPERLIQUID_API_URL: 'http://127.0.0.1:1' }
  t.match(await runInline(handler, {}, { providers }), { ok: false, status: 400, field: 'market' })
  t.match(await runInline(handler, { market: 'BTC-USD' }, { providers }), { ok: false, status: 400, field: 'market' })
  t.match(await runInline(handler, { market: 'BTC', bandsPercent: [0] }, { providers }), {
    ok: false,
    status: 400,
    field: 'bandsPercent.0',
  })
  t.match(await runInline(handler, { market: 'BTC', bandsPercent: [51] }, { providers }), {
    ok: false,
    status: 400,
    field: 'bandsPercent.0',
  })
  t.match(await runInline(handler, { market: 'BTC', bandsPercent: [1, 2, 3, 4, 5, 6, 7, 8, 9] }, { providers }), {
    ok: false,
    status: 400,
    field: 'bandsPercent',
  })
})

t.test('provider problems', async (t) => {
  await t.rejects(runInline(handler, { market: 'BTC' }, { providers: {} }), { code: 'upstream_not_configured' })
  const down = await startJsonStandIn(t, () => ({ status: 500, raw: 'oops' }))
  await t.rejects(runInline(handler, { market: 'HYPE/USDC' }, { providers: { HYPERLIQUID_API_URL: down.url } }), {
    code: 'upstream_failed',
  })
  const wrong = await hyperliquidStandIn(t, { spotMeta: { tokens: 'x' } })
  await t.rejects(runInline(handler, { market: 'HYPE/USDC' }, { providers: { HYPERLIQUID_API_URL: wrong.url } }), {
    code: 'upstream_failed',
    message: /spotMeta/,
  })
})

t.test('spotMeta entries without the documented fields are skipped, not a crash', async (t) => {
  const meta = spotMetaAndCtxsFixture[0] as { tokens: unknown[]; universe: unknown[] }
  const hl = await hyperliquidStandIn(t, {
    ...answers,
    spotMeta: { tokens: [null, ...meta.tokens], universe: [null, { tokens: [1, 0] }, ...meta.universe] },
  })
  const out = okBody(await runInline(handler, { market: 'HYPE/USDC' }, { providers: { HYPERLIQUID_API_URL: hl.url } }))
  t.match(out, { marketType: 'spot', coin: '@107', pair: 'HYPE/USDC' })
})

import t from 'tap'
import { compileInputValidator } from '../../src/pool/input-validator.js'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import { hyperliquidStandIn, startJsonStandIn } from '../../test/helpers/hyperliquid-stand-in.js'
import handler from './index.js'

// the documented l2Book shape: levels = [bids, asks], decimal strings, n = number of orders
const book = (coin: string) => ({
  coin,
  time: 1_754_450_974_231,
  levels: [
    [
      { px: '100.0', sz: '2.0', n: 3 },
      { px: '99.5', sz: '1.0', n: 1 },
      { px: '99.0', sz: '4.0', n: 2 },
    ],
    [
      { px: '100.5', sz: '1.5', n: 2 },
      { px: '101.0', sz: '3.0', n: 1 },
    ],
  ],
})

t.test('the example is valid', async (t) => {
  t.equal(compileInputValidator(handler).validate(structuredClone(handler.example), 'body'), null)
})

t.test('levels, top of book and totals', async (t) => {
  const hl = await hyperliquidStandIn(t, { l2Book: (b: any) => book(b.coin) })
  const out = okBody(
    await runInline(
      handler,
      { coin: 'ETH', nSigFigs: '5' },
      { from: 'query', providers: { HYPERLIQUID_API_URL: hl.url } },
    ),
  )
  t.equal(hl.requests.length, 1)
  t.same(hl.requests[0]!.body, { type: 'l2Book', coin: 'ETH', nSigFigs: 5 })
  t.match(out, {
    venue: 'hyperliquid',
    coin: 'ETH',
    time: '2025-08-06T03:29:34.231Z',
    nSigFigs: 5,
    bestBid: 100,
    bestAsk: 100.5,
    mid: 100.25,
    spread: 0.5,
  })
  t.equal(out.spreadBps, Number(((0.5 / 100.25) * 10_000).toPrecision(12)))
  t.same(out.bids, [
    { px: 100, sz: 2, n: 3, cumulativeSz: 2 },
    { px: 99.5, sz: 1, n: 1, cumulativeSz: 3 },
    { px: 99, sz: 4, n: 2, cumulativeSz: 7 },
  ])
  t.same(
    out.asks.map((l: any) => l.cumulativeSz),
    [1.5, 4.5],
  )
  t.same(out.totals, { bidSz: 7, askSz: 4.5, bidNotionalUsd: 695.5, askNotionalUsd: 453.75 })
})

t.test('depth cuts the levels; no nSigFigs is not sent', async (t) => {
  const hl = await hyperliquidStandIn(t, { l2Book: (b: any) => book(b.coin) })
  const out = okBody(
    await runInline(handler, { coin: 'BTC', depth: 1 }, { providers: { HYPERLIQUID_API_URL: hl.url } }),
  )
  t.same(hl.requests[0]!.body, { type: 'l2Book', coin: 'BTC' })
  t.equal(out.bids.length, 1)
  t.equal(out.asks.length, 1)
  t.same(out.totals, { bidSz: 2, askSz: 1.5, bidNotionalUsd: 200, askNotionalUsd: 150.75 })
})

t.test('an empty side: no mid, no spread', async (t) => {
  const hl = await hyperliquidStandIn(t, { l2Book: { coin: 'X', time: 1, levels: [[{ px: '5', sz: '1', n: 1 }], []] } })
  const out = okBody(await runInline(handler, { coin: 'X' }, { providers: { HYPERLIQUID_API_URL: hl.url } }))
  t.match(out, { bestBid: 5, bestAsk: null, mid: null, spread: null, spreadBps: null, asks: [] })
})

t.test('an unknown coin (Hyperliquid answers null) is a 422 on coin', async (t) => {
  const hl = await hyperliquidStandIn(t, { l2Book: null })
  t.match(await runInline(handler, { coin: 'NOPE' }, { providers: { HYPERLIQUID_API_URL: hl.url } }), {
    ok: false,
    status: 422,
    field: 'coin',
  })
})

t.test('bad input names the field', async (t) => {
  const providers = { HYPERLIQUID_API_URL: 'http://127.0.0.1:1' }
  t.match(await runInline(handler, {}, { providers }), { ok: false, status: 400, field: 'coin' })
  t.match(await runInline(handler, { coin: 'BTC/USDC' }, { providers }), { ok: false, status: 400, field: 'coin' })
  t.match(await runInline(handler, { coin: 'A'.repeat(21) }, { providers }), { ok: false, status: 400, field: 'coin' })
  t.match(await runInline(handler, { coin: 'BTC', nSigFigs: 6 }, { providers }), {
    ok: false,
    status: 400,
    field: 'nSigFigs',
  })
  t.match(await runInline(handler, { coin: 'BTC', depth: 21 }, { providers }), {
    ok: false,
    status: 400,
    field: 'depth',
  })
})

t.test('provider problems', async (t) => {
  await t.rejects(runInline(handler, { coin: 'BTC' }, { providers: {} }), { code: 'upstream_not_configured' })
  const down = await startJsonStandIn(t, () => ({ status: 502, raw: 'bad gateway' }))
  await t.rejects(runInline(handler, { coin: 'BTC' }, { providers: { HYPERLIQUID_API_URL: down.url } }), {
    code: 'upstream_failed',
  })
  const wrong = await hyperliquidStandIn(t, { l2Book: { coin: 'BTC', levels: [[{ px: 'abc', sz: '1', n: 1 }], []] } })
  await t.rejects(runInline(handler, { coin: 'BTC' }, { providers: { HYPERLIQUID_API_URL: wrong.url } }), {
    code: 'upstream_failed',
    message: /unexpected shape/,
  })
})

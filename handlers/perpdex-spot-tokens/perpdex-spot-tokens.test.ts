import t from 'tap'
import { compileInputValidator } from '../../src/pool/input-validator.js'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import {
  hyperliquidStandIn,
  spotMetaAndCtxsFixture,
  startJsonStandIn,
} from '../../test/helpers/hyperliquid-stand-in.js'
import handler from './index.js'

t.test('the example is valid', async (t) => {
  t.equal(compileInputValidator(handler).validate(structuredClone(handler.example), 'body'), null)
})

t.test('all pairs, by volume, with token details', async (t) => {
  const hl = await hyperliquidStandIn(t, { spotMetaAndAssetCtxs: spotMetaAndCtxsFixture })
  const out = okBody(await runInline(handler, {}, { providers: { HYPERLIQUID_API_URL: hl.url } }))
  t.same(
    hl.requests.map((r) => [r.method, r.path, r.body]),
    [['POST', '/info', { type: 'spotMetaAndAssetCtxs' }]],
  )
  t.match(out, { venue: 'hyperliquid', tokensTotal: 3, pairsTotal: 2, tokenFound: null, pairsMatched: 2 })
  t.same(
    out.pairs.map((p: any) => p.pair),
    ['HYPE/USDC', 'PURR/USDC'],
  )
  t.same(out.pairs[0], {
    pair: 'HYPE/USDC',
    coin: '@107',
    index: 107,
    isCanonical: false,
    base: {
      name: 'HYPE',
      fullName: 'Hyperliquid',
      index: 150,
      tokenId: '0x0d01dc56dcaaca66ad901c959b4011ec',
      szDecimals: 2,
      weiDecimals: 8,
      evmContract: '0x2222222222222222222222222222222222222222',
    },
    quote: {
      name: 'USDC',
      fullName: null,
      index: 0,
      tokenId: '0x6d1e7cde53ba9467b783cb7c530ce054',
      szDecimals: 8,
      weiDecimals: 8,
      evmContract: null,
    },
    markPx: 40,
    midPx: 40.005,
    prevDayPx: 38,
    change24hPercent: 5.26315789474,
    dayNotionalVolume: 95000000,
    dayBaseVolume: 2400000,
    circulatingSupply: 333000000,
    totalSupply: 999000000,
    marketCap: 13320000000,
  })
  t.match(out.pairs[1], { change24hPercent: -20, marketCap: 119200000 })
})

t.test('filters and sorts', async (t) => {
  const hl = await hyperliquidStandIn(t, { spotMetaAndAssetCtxs: spotMetaAndCtxsFixture })
  const providers = { HYPERLIQUID_API_URL: hl.url }
  const purr = okBody(await runInline(handler, { token: 'purr' }, { from: 'query', providers }))
  t.match(purr, { tokenFound: true, pairsMatched: 1 })
  t.equal(purr.pairs[0].coin, 'PURR/USDC')
  const usdc = okBody(await runInline(handler, { token: 'USDC', sort: 'change', limit: 1 }, { providers }))
  t.equal(usdc.pairsMatched, 2)
  t.same(
    usdc.pairs.map((p: any) => p.pair),
    ['HYPE/USDC'],
  )
  const canonical = okBody(await runInline(handler, { canonicalOnly: true }, { providers }))
  t.same(
    canonical.pairs.map((p: any) => p.pair),
    ['PURR/USDC'],
  )
  const none = okBody(await runInline(handler, { token: 'NOPE' }, { providers }))
  t.match(none, { tokenFound: false, pairsMatched: 0, pairs: [] })
})

t.test('bad input names the field', async (t) => {
  const providers = { HYPERLIQUID_API_URL: 'http://127.0.0.1:1' }
  t.match(await runInline(handler, { token: '' }, { providers }), { ok: false, status: 400, field: 'token' })
  t.match(await runInline(handler, { token: 'HYPE/USDC' }, { providers }), { ok: false, status: 400, field: 'token' })
  t.match(await runInline(handler, { sort: 'name' }, { providers }), { ok: false, status: 400, field: 'sort' })
  t.match(await runInline(handler, { limit: 201 }, { providers }), { ok: false, status: 400, field: 'limit' })
})

t.test('provider problems', async (t) => {
  await t.rejects(runInline(handler, {}, { providers: {} }), { code: 'upstream_not_configured' })
  const down = await startJsonStandIn(t, () => ({ status: 500, raw: 'oops' }))
  await t.rejects(runInline(handler, {}, { providers: { HYPERLIQUID_API_URL: down.url } }), { code: 'upstream_failed' })
  const wrong = await hyperliquidStandIn(t, { spotMetaAndAssetCtxs: [{ tokens: [] }] })
  await t.rejects(runInline(handler, {}, { providers: { HYPERLIQUID_API_URL: wrong.url } }), {
    code: 'upstream_failed',
    message: /unexpected shape/,
  })
})

t.test("a pair without its own context gets nulls, never another pair's prices", async (t) => {
  const [meta, ctxs] = spotMetaAndCtxsFixture as [unknown, Array<Record<string, unknown>>]
  // Hyperliquid sent only the @107 context: position 0 now holds HYPE's figures, not PURR's
  const hl = await hyperliquidStandIn(t, { spotMetaAndAssetCtxs: [meta, [ctxs[1]]] })
  const out = okBody(await runInline(handler, { token: 'PURR' }, { providers: { HYPERLIQUID_API_URL: hl.url } }))
  t.match(out.pairs[0], { pair: 'PURR/USDC', markPx: null, dayNotionalVolume: null, marketCap: null })
})

t.test('tokens and pairs without a name are left out, not a crash', async (t) => {
  const [meta, ctxs] = spotMetaAndCtxsFixture as [{ tokens: unknown[]; universe: unknown[] }, unknown[]]
  const hl = await hyperliquidStandIn(t, {
    spotMetaAndAssetCtxs: [
      {
        tokens: [{ index: 9 }, null, ...meta.tokens],
        universe: [...meta.universe, { tokens: [9, 0], index: 9 }, null],
      },
      ctxs,
    ],
  })
  const out = okBody(await runInline(handler, { token: 'HYPE' }, { providers: { HYPERLIQUID_API_URL: hl.url } }))
  t.match(out, { tokenFound: true, pairsMatched: 1, pairs: [{ pair: 'HYPE/USDC', markPx: 40 }] })
})

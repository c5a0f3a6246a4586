import t from 'tap'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import { llamaPools } from '../../test/helpers/market-llama-pools.js'
import { marketStandIn } from '../../test/helpers/market-stand-in.js'
import { compileInputValidator } from '../../src/pool/input-validator.js'
import handler from './index.js'

async function standIn(t: { teardown(fn: () => unknown): void }) {
  const api = await marketStandIn(t, (req) => (req.path === '/pools' ? { body: llamaPools } : undefined))
  return { api, providers: { DEFILLAMA_YIELDS_URL: api.url } }
}

t.test('the example is valid and maps pools', async (t) => {
  t.equal(compileInputValidator(handler).validate(structuredClone(handler.example), 'body'), null)
  const { api, providers } = await standIn(t)
  const out = okBody(await runInline(handler, handler.example, { providers }))
  t.equal(api.last().path, '/pools')
  t.equal(api.last().method, 'GET')
  t.equal(out.poolsScanned, 9, 'the malformed entry is skipped')
  // Base, token USDC, TVL ≥ 1M, stablecoin: morpho 7.7, aave 4.8, USDC-USDBC 9.2 (the outlier and the tiny pool are out)
  t.same(
    out.pools.map((p: any) => p.pool),
    ['base-aero-usdc-usdbc', 'base-morpho-usdc', 'base-aave-usdc'],
  )
  t.equal(out.matched, 3)
  t.same(out.pools[1], {
    pool: 'base-morpho-usdc',
    url: 'https://defillama.com/yields/pool/base-morpho-usdc',
    chain: 'Base',
    project: 'morpho-blue',
    symbol: 'USDC',
    poolMeta: 'Steakhouse USDC',
    tvlUsd: 40_000_000,
    apy: 7.7,
    apyBase: 6.2,
    apyReward: 1.5,
    apyMean30d: 7.0,
    apyChange1d: 0,
    apyChange7d: 0,
    apyChange30d: 0,
    stablecoin: true,
    ilRisk: 'no',
    exposure: 'single',
    rewardTokens: ['0xBAa5CC21fd487B8Fcc2F632f3F4E8D37262a0842'],
    underlyingTokens: [],
    volumeUsd1d: null,
    outlier: false,
    prediction: { predictedClass: 'Stable/Up', predictedProbability: 70, binnedConfidence: 2 },
  })
})

t.test('filters and sorting', async (t) => {
  const { providers } = await standIn(t)
  const ids = async (input: Record<string, unknown>, from: 'query' | 'body' = 'body') =>
    okBody(await runInline(handler, input, { providers, from })).pools.map((p: any) => p.pool)
  t.same(
    await ids({ project: 'AAVE-V3', sortBy: 'tvlUsd' }),
    ['eth-aave-usdc', 'base-aave-usdc'],
    'project across chains, by TVL',
  )
  t.same(await ids({ chain: 'base', exposure: 'multi' }), ['base-aero-usdc-weth', 'base-aero-usdc-usdbc'])
  t.same(await ids({ chain: 'Base', noIlRisk: true, minApy: 4, maxApy: 8 }), ['base-morpho-usdc', 'base-aave-usdc'])
  t.same(
    await ids({ symbol: 'weth' }),
    ['base-aero-usdc-weth', 'arb-gmx-glp'],
    'token match inside multi-token symbols',
  )
  t.same(await ids({ symbol: 'USD' }), [], 'no partial-token matches')
  t.same(
    await ids({ chain: 'Base', minTvlUsd: 0, symbol: 'USDC', exposure: 'single' }),
    ['base-tiny', 'base-morpho-usdc', 'base-aave-usdc'],
    'minTvlUsd 0 keeps tiny pools',
  )
  t.same(await ids({ chain: 'Base', includeOutliers: true, exposure: 'single', stablecoinOnly: true }), [
    'base-outlier',
    'base-morpho-usdc',
    'base-aave-usdc',
  ])
  t.same(
    await ids({ chain: 'Base', sortBy: 'apyMean30d', limit: '2', stablecoinOnly: 'true' }, 'query'),
    ['base-aero-usdc-usdbc', 'base-morpho-usdc'],
    'query-string input',
  )
  t.same(await ids({ chain: 'Solana' }), [], 'nothing matches: an empty list')
})

t.test('bad input: 400 naming the field', async (t) => {
  const providers = { DEFILLAMA_YIELDS_URL: 'http://127.0.0.1:1' }
  t.match(await runInline(handler, { limit: 0 }, { providers }), { ok: false, status: 400, field: 'limit' })
  t.match(await runInline(handler, { limit: 101 }, { providers }), { ok: false, status: 400, field: 'limit' })
  t.match(await runInline(handler, { minTvlUsd: -1 }, { providers }), { ok: false, status: 400, field: 'minTvlUsd' })
  t.match(await runInline(handler, { sortBy: 'risk' }, { providers }), { ok: false, status: 400, field: 'sortBy' })
  t.match(await runInline(handler, { chain: '' }, { providers }), { ok: false, status: 400, field: 'chain' })
  t.match(await runInline(handler, { chain: 'x'.repeat(41) }, { providers }), {
    ok: false,
    status: 400,
    field: 'chain',
  })
  t.match(await runInline(handler, { exposure: 'both' }, { providers }), { ok: false, status: 400, field: 'exposure' })
})

t.test('provider problems', async (t) => {
  await t.rejects(runInline(handler, handler.example, { providers: {} }), { code: 'upstream_not_configured' })
  const api = await marketStandIn(t, () => ({ status: 503, body: 'unavailable' }))
  const providers = { DEFILLAMA_YIELDS_URL: api.url }
  await t.rejects(runInline(handler, handler.example, { providers }), { code: 'upstream_failed' })
  api.route(() => ({ body: { status: 'error', message: 'oops' } }))
  await t.rejects(runInline(handler, handler.example, { providers }), {
    code: 'upstream_failed',
    message: /without a pools list/,
  })
  api.route(() => ({ body: 'not json at all' }))
  await t.rejects(runInline(handler, handler.example, { providers }), { code: 'upstream_failed' })
})

t.test('calls close together share one read of the pools list; a failed read is not kept', async (t) => {
  let fail = true
  const api = await marketStandIn(t, (req) =>
    req.path !== '/pools' ? undefined : fail ? { status: 500, body: { error: 'down' } } : { body: llamaPools },
  )
  const providers = { DEFILLAMA_YIELDS_URL: api.url }
  const down = await runInline(handler, handler.example, { providers }).then(
    () => null,
    (e) => e,
  )
  t.match(down, { code: 'upstream_failed' })
  fail = false
  const outs = await Promise.all([1, 2, 3].map(() => runInline(handler, handler.example, { providers })))
  for (const o of outs) t.equal(okBody(o).matched, 3)
  t.equal(api.requests.length, 2, 'the failed read, then one read for three calls')
})

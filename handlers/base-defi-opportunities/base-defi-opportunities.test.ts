import t from 'tap'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import { llamaPools } from '../../test/helpers/market-llama-pools.js'
import { marketStandIn } from '../../test/helpers/market-stand-in.js'
import { compileInputValidator } from '../../src/pool/input-validator.js'
import handler from './index.js'

const kind = (out: Record<string, any>, k: string) => out.opportunities.find((o: any) => o.kind === k)

t.test('Base pools grouped by kind, with risk notes', async (t) => {
  t.equal(
    compileInputValidator(handler).validate(structuredClone(handler.example), 'body'),
    null,
    'the example is valid',
  )
  const api = await marketStandIn(t, (req) => (req.path === '/yields/pools' ? { body: llamaPools } : undefined))
  const out = okBody(
    await runInline(handler, handler.example, { providers: { DEFILLAMA_YIELDS_URL: `${api.url}/yields/` } }),
  )
  t.equal(api.last().path, '/yields/pools')
  t.equal(out.chain, 'Base')
  t.equal(out.poolsOnBase, 7, 'other chains are left out')
  t.equal(out.considered, 5, 'the tiny pool and the outlier are out')
  t.same(
    out.opportunities.map((o: any) => [o.kind, o.count]),
    [
      ['stablecoin-deposit', 2],
      ['asset-deposit', 1],
      ['stable-liquidity-pool', 1],
      ['liquidity-pool', 1],
    ],
  )
  t.same(
    kind(out, 'stablecoin-deposit').pools.map((p: any) => p.pool),
    ['base-morpho-usdc', 'base-aave-usdc'],
    'ranked by APY',
  )
  t.same(kind(out, 'stablecoin-deposit').pools[0].riskNotes, [])

  const lp = kind(out, 'liquidity-pool').pools[0]
  t.match(lp, {
    pool: 'base-aero-usdc-weth',
    project: 'aerodrome-slipstream',
    apy: 37.5,
    apyBase: 12.5,
    apyReward: 25,
    ilRisk: 'yes',
    exposure: 'multi',
    volumeUsd1d: 55_000_000,
  })
  t.same(lp.riskNotes, [
    'impermanent-loss risk (DefiLlama ilRisk "yes"); impermanent loss over the last 7 days: -0.8%',
    '25% of the 37.5% APY is paid in reward tokens, whose price and emissions can fall',
  ])
  t.same(kind(out, 'stable-liquidity-pool').pools[0].riskNotes, [
    '9% of the 9.2% APY is paid in reward tokens, whose price and emissions can fall',
    'a smaller pool (TVL $2,000,000, under $10,000,000)',
  ])
  t.same(kind(out, 'asset-deposit').pools[0].riskNotes, ['price exposure to the deposited asset'])
  t.equal(out.unclassified, 0)
})

t.test('filters', async (t) => {
  const api = await marketStandIn(t, (req) => (req.path === '/pools' ? { body: llamaPools } : undefined))
  const providers = { DEFILLAMA_YIELDS_URL: api.url }
  const usdcOnly = okBody(await runInline(handler, { symbol: 'usdc', minApy: '5' }, { from: 'query', providers }))
  t.equal(usdcOnly.considered, 3, 'morpho 7.7, USDC-USDBC 9.2, USDC-WETH 37.5')
  t.equal(kind(usdcOnly, 'asset-deposit').count, 0)
  const stable = okBody(
    await runInline(handler, { stablecoinOnly: true, minTvlUsd: 0, limitPerKind: 1 }, { providers }),
  )
  t.same(
    kind(stable, 'stablecoin-deposit').pools.map((p: any) => p.pool),
    ['base-tiny'],
    'limit per kind; minTvlUsd 0 keeps the tiny pool',
  )
  t.equal(kind(stable, 'stablecoin-deposit').count, 3)
  t.same(kind(stable, 'stablecoin-deposit').pools[0].riskNotes, ['a smaller pool (TVL $5,000, under $10,000,000)'])
  t.equal(kind(stable, 'liquidity-pool').count, 0)
})

t.test('APY spikes, drops and predictions become notes', async (t) => {
  const data = [
    {
      pool: 'spiky',
      chain: 'Base',
      project: 'p',
      symbol: 'WETH-DEGEN',
      tvlUsd: 20_000_000,
      apy: 20,
      apyBase: 20,
      apyReward: null,
      apyMean30d: 5,
      apyPct7D: -8,
      stablecoin: false,
      ilRisk: 'yes',
      exposure: 'multi',
      predictions: { predictedClass: 'Down', predictedProbability: 80, binnedConfidence: 3 },
    },
    { pool: 'no-exposure', chain: 'Base', project: 'q', symbol: 'X', tvlUsd: 20_000_000, apy: 3 },
  ]
  const api = await marketStandIn(t, () => ({ body: { status: 'success', data } }))
  const out = okBody(await runInline(handler, {}, { providers: { DEFILLAMA_YIELDS_URL: api.url } }))
  t.same(kind(out, 'liquidity-pool').pools[0].riskNotes, [
    'impermanent-loss risk (DefiLlama ilRisk "yes")',
    'the current APY 20% is more than 2× its 30-day mean 5%; it may not last',
    'the APY fell 8 percentage points over 7 days',
    'DefiLlama\'s model predicts the APY will fall ("Down", probability 80%)',
  ])
  t.equal(out.unclassified, 1, 'a pool without exposure is counted, not guessed')
})

t.test('bad input: 400 naming the field', async (t) => {
  const providers = { DEFILLAMA_YIELDS_URL: 'http://127.0.0.1:1' }
  t.match(await runInline(handler, { limitPerKind: 26 }, { providers }), {
    ok: false,
    status: 400,
    field: 'limitPerKind',
  })
  t.match(await runInline(handler, { minApy: -2 }, { providers }), { ok: false, status: 400, field: 'minApy' })
  t.match(await runInline(handler, { symbol: '' }, { providers }), { ok: false, status: 400, field: 'symbol' })
  t.match(
    await runInline(handler, { chain: 'Ethereum' }, { providers }),
    { ok: false, status: 400, field: 'chain' },
    'the chain is fixed',
  )
})

t.test('provider problems', async (t) => {
  await t.rejects(runInline(handler, handler.example, { providers: {} }), { code: 'upstream_not_configured' })
  const api = await marketStandIn(t, () => ({ status: 500, body: { error: 'x' } }))
  await t.rejects(runInline(handler, handler.example, { providers: { DEFILLAMA_YIELDS_URL: api.url } }), {
    code: 'upstream_failed',
  })
  api.route(() => ({ body: [1, 2, 3] }))
  await t.rejects(runInline(handler, handler.example, { providers: { DEFILLAMA_YIELDS_URL: api.url } }), {
    code: 'upstream_failed',
  })
})

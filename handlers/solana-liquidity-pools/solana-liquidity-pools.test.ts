import t from 'tap'
import { compileInputValidator } from '../../src/pool/input-validator.js'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import { startJsonStandIn } from '../../test/helpers/hyperliquid-stand-in.js'
import { dexPair, USDC_MINT } from '../../test/helpers/solana-dexscreener-stand-in.js'
import handler from './index.js'

const BONK = { address: 'DezXAZ8z7PnrnRJjz3wXBoRgixCa6xjnB7YaB1pPB263', name: 'Bonk', symbol: 'Bonk' }
const pairs = [
  dexPair({
    dexId: 'orca',
    pairAddress: '5zpyutJu9ee6jFymDGoK7F6S5Kczqtc9FomP3ueKuyA9',
    base: BONK,
    liquidityUsd: 1500000.5,
    volumeH24: 300000,
    createdAt: 1_690_000_000_000,
  }),
  dexPair({
    dexId: 'raydium',
    pairAddress: 'HVNwzt7Pxfu76KHCMQPTLuTCLTm6WnQ1esLv4eizseSv',
    base: BONK,
    quote: { address: USDC_MINT, name: 'USD Coin', symbol: 'USDC' },
    liquidityUsd: 2500000,
    volumeH24: 100000,
    createdAt: 1_700_000_000_000,
  }),
  dexPair({
    dexId: 'meteora',
    pairAddress: '8sLbNZoA1cfnvMJLPfp98ZLAnFSYCFApfJKMbiXNLwxj',
    base: BONK,
    liquidityUsd: null,
    volumeH24: 900000,
    createdAt: null,
    priceUsd: null,
  }),
]

t.test('the example is valid', async (t) => {
  t.equal(compileInputValidator(handler).validate(structuredClone(handler.example), 'body'), null)
})

t.test('every pool of a token, by liquidity', async (t) => {
  const ds = await startJsonStandIn(t, () => ({ json: pairs }))
  const out = okBody(
    await runInline(handler, { tokenAddress: BONK.address }, { providers: { DEXSCREENER_API_URL: ds.url } }),
  )
  t.same(
    ds.requests.map((r) => [r.method, r.path]),
    [['GET', `/token-pairs/v1/solana/${BONK.address}`]],
  )
  t.match(out, {
    chain: 'solana',
    source: 'DexScreener',
    tokenAddress: BONK.address,
    query: null,
    poolsFound: 3,
    totalLiquidityUsd: 4000000.5,
  })
  t.same(
    out.pools.map((p: any) => p.dex),
    ['raydium', 'orca', 'meteora'],
  )
  const ray = out.pools[0]
  t.match(ray, {
    dex: 'raydium',
    labels: ['CLMM'],
    pairAddress: 'HVNwzt7Pxfu76KHCMQPTLuTCLTm6WnQ1esLv4eizseSv',
    url: 'https://dexscreener.com/solana/hvnwzt7pxfu76khcmqptlutcltm6wnq1eslv4eizsesv',
    baseToken: BONK,
    quoteToken: { address: USDC_MINT, symbol: 'USDC' },
    priceUsd: 0.00002468,
    priceNative: 0.0000001234,
    liquidityUsd: 2500000,
    liquidityBase: 1000000,
    liquidityQuote: 125.5,
    volumeUsd: { m5: 3, h1: 40, h6: 250, h24: 100000 },
    txns24h: { buys: 240, sells: 260 },
    priceChangePercent: { h1: -1.5, h24: 12.25 },
    fdvUsd: 2000000,
    marketCapUsd: 1800000,
    createdAt: '2023-11-14T22:13:20.000Z',
  })
  t.type(ray.ageHours, 'number')
  t.match(
    out.pools[2],
    { liquidityUsd: null, priceUsd: null, createdAt: null, ageHours: null },
    'missing values stay null',
  )
})

t.test('sorting, floor, limit', async (t) => {
  const ds = await startJsonStandIn(t, () => ({ json: pairs }))
  const providers = { DEXSCREENER_API_URL: ds.url }
  const vol = okBody(await runInline(handler, { tokenAddress: BONK.address, sort: 'volume' }, { providers }))
  t.same(
    vol.pools.map((p: any) => p.dex),
    ['meteora', 'orca', 'raydium'],
  )
  const newest = okBody(
    await runInline(handler, { tokenAddress: BONK.address, sort: 'newest', limit: '1' }, { from: 'query', providers }),
  )
  t.same(
    newest.pools.map((p: any) => p.dex),
    ['raydium'],
  )
  t.equal(newest.poolsFound, 3)
  const floor = okBody(
    await runInline(handler, { tokenAddress: BONK.address, minLiquidityUsd: 2000000 }, { providers }),
  )
  t.same(
    floor.pools.map((p: any) => p.dex),
    ['raydium'],
  )
})

t.test('search: Solana pools only', async (t) => {
  const other = dexPair({
    dexId: 'uniswap',
    chainId: 'ethereum',
    pairAddress: '0x1111111111111111111111111111111111111111',
    base: { address: '0x2222222222222222222222222222222222222222', name: 'Bonk', symbol: 'BONK' },
    liquidityUsd: 9e9,
  })
  const ds = await startJsonStandIn(t, (r) => ({
    json: { schemaVersion: '1.0.0', pairs: r.query.get('q') === 'nothing here' ? null : [other, ...pairs] },
  }))
  const out = okBody(await runInline(handler, { query: ' bonk ' }, { providers: { DEXSCREENER_API_URL: ds.url } }))
  t.equal(ds.requests[0]!.path, '/latest/dex/search')
  t.equal(ds.requests[0]!.query.get('q'), 'bonk')
  t.equal(out.poolsFound, 3)
  t.notOk(out.pools.some((p: any) => p.dex === 'uniswap'))
  const none = okBody(
    await runInline(handler, { query: 'nothing here' }, { providers: { DEXSCREENER_API_URL: ds.url } }),
  )
  t.match(none, { poolsFound: 0, pools: [], totalLiquidityUsd: 0 })
})

t.test('a token with no pools: empty list', async (t) => {
  const ds = await startJsonStandIn(t, () => ({ json: [] }))
  t.match(
    okBody(await runInline(handler, { tokenAddress: BONK.address }, { providers: { DEXSCREENER_API_URL: ds.url } })),
    { poolsFound: 0, pools: [] },
  )
})

t.test('bad input names the field', async (t) => {
  const providers = { DEXSCREENER_API_URL: 'http://127.0.0.1:1' }
  t.match(await runInline(handler, {}, { providers }), { ok: false, status: 400, field: 'tokenAddress' })
  t.match(await runInline(handler, { tokenAddress: BONK.address, query: 'bonk' }, { providers }), {
    ok: false,
    status: 400,
    field: 'query',
  })
  t.match(await runInline(handler, { tokenAddress: '0x1234' }, { providers }), {
    ok: false,
    status: 400,
    field: 'tokenAddress',
  })
  t.match(await runInline(handler, { query: 'x'.repeat(65) }, { providers }), {
    ok: false,
    status: 400,
    field: 'query',
  })
  t.match(await runInline(handler, { query: 'bonk', limit: 101 }, { providers }), {
    ok: false,
    status: 400,
    field: 'limit',
  })
})

t.test('provider problems', async (t) => {
  await t.rejects(runInline(handler, { tokenAddress: BONK.address }, { providers: {} }), {
    code: 'upstream_not_configured',
  })
  const limited = await startJsonStandIn(t, () => ({ status: 429, raw: 'rate limited' }))
  await t.rejects(
    runInline(handler, { tokenAddress: BONK.address }, { providers: { DEXSCREENER_API_URL: limited.url } }),
    { code: 'upstream_failed', message: /HTTP 429/ },
  )
  const wrong = await startJsonStandIn(t, () => ({ json: { pairs: [] } }))
  await t.rejects(
    runInline(handler, { tokenAddress: BONK.address }, { providers: { DEXSCREENER_API_URL: wrong.url } }),
    { code: 'upstream_failed', message: /unexpected shape/ },
  )
})

t.test('a pool creation time that is no date reads as null instead of crashing', async (t) => {
  const odd = dexPair({
    dexId: 'orca',
    pairAddress: '5zpyutJu9ee6jFymDGoK7F6S5Kczqtc9FomP3ueKuyA9',
    base: BONK,
    createdAt: 1e20,
  })
  const ds = await startJsonStandIn(t, () => ({ json: [odd] }))
  const out = okBody(
    await runInline(handler, { tokenAddress: BONK.address }, { providers: { DEXSCREENER_API_URL: ds.url } }),
  )
  t.match(out.pools[0], { dex: 'orca', createdAt: null, ageHours: null })
})

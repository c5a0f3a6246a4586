import t from 'tap'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import { marketStandIn } from '../../test/helpers/market-stand-in.js'
import { compileInputValidator } from '../../src/pool/input-validator.js'
import handler from './index.js'

const USDC = '0x833589fcd6edb6e08f4c7c32d4f71b54bda02913'
const WETH = '0x4200000000000000000000000000000000000006'
const TAKER = '0x70a9f34f9b34c64957b9c401a97bfed35b95049e'

// the documented shape of https://0x.org/docs/api#tag/Swap/operation/swap::permit2::getPrice
const price = {
  blockNumber: '21500000',
  buyAmount: '285714285714285714',
  buyToken: WETH,
  fees: { integratorFee: null, zeroExFee: { amount: '150000', token: USDC, type: 'volume' }, gasFee: null },
  gas: '288095',
  gasPrice: '7062490',
  issues: {
    allowance: { actual: '0', spender: '0x000000000022d473030f116ddee9f6b43ac78ba3' },
    balance: { token: USDC, actual: '0', expected: '1000000000' },
    simulationIncomplete: false,
    invalidSourcesPassed: [],
  },
  liquidityAvailable: true,
  minBuyAmount: '282857142857142857',
  route: {
    fills: [
      { from: USDC, to: WETH, source: 'Aerodrome_V3', proportionBps: '6000' },
      { from: USDC, to: WETH, source: 'Uniswap_V3', proportionBps: '4000' },
    ],
    tokens: [
      { address: USDC, symbol: 'USDC' },
      { address: WETH, symbol: 'WETH' },
    ],
  },
  sellAmount: '1000000000',
  sellToken: USDC,
  tokenMetadata: { buyToken: { buyTaxBps: '0', sellTaxBps: '0' }, sellToken: { buyTaxBps: '0', sellTaxBps: '0' } },
  totalNetworkFee: '2034668056550',
  zid: '0x111111111111111111111111',
}

t.test('a price maps amounts, route, gas and issues', async (t) => {
  t.equal(
    compileInputValidator(handler).validate(structuredClone(handler.example), 'body'),
    null,
    'the example is valid',
  )
  const api = await marketStandIn(t, (req) => (req.path === '/swap/permit2/price' ? { body: price } : undefined))
  const out = okBody(
    await runInline(
      handler,
      {
        sellToken: USDC,
        buyToken: WETH,
        sellAmount: '1000000000',
        taker: TAKER,
        slippageBps: 100,
        sellDecimals: 6,
        buyDecimals: 18,
      },
      { providers: { ZEROX_API_URL: api.url, ZEROX_API_KEY: 'zx-key' } },
    ),
  )
  t.match(out, {
    source: '0x',
    chainId: 8453,
    liquidityAvailable: true,
    sellAmount: '1000000000',
    buyAmount: '285714285714285714',
    minBuyAmount: '282857142857142857',
    gas: '288095',
    gasPrice: '7062490',
    totalNetworkFee: '2034668056550',
    blockNumber: '21500000',
  })
  t.same(out.sources, ['Aerodrome_V3', 'Uniswap_V3'])
  t.same(out.route.fills[0], { from: USDC, to: WETH, source: 'Aerodrome_V3', percent: 60 })
  t.same(out.issues, {
    allowance: { actual: '0', spender: '0x000000000022d473030f116ddee9f6b43ac78ba3' },
    balance: { token: USDC, actual: '0', expected: '1000000000' },
    simulationIncomplete: false,
    invalidSourcesPassed: [],
  })
  t.same(out.fees.zeroExFee, { amount: '150000', token: USDC, type: 'volume' })
  t.same(out.amounts, { sell: '1000', buy: '0.285714285714285714', minBuy: '0.282857142857142857' })
  t.ok(Math.abs(out.price - 0.000285714285714) < 1e-12, `price ${out.price}`)

  const req = api.last()
  t.equal(req.path, '/swap/permit2/price')
  t.equal(req.query.get('chainId'), '8453')
  t.equal(req.query.get('sellToken'), USDC)
  t.equal(req.query.get('buyToken'), WETH)
  t.equal(req.query.get('sellAmount'), '1000000000')
  t.equal(req.query.get('taker'), TAKER)
  t.equal(req.query.get('slippageBps'), '100')
  t.equal(req.headers['0x-api-key'], 'zx-key')
  t.equal(req.headers['0x-version'], 'v2')
})

t.test('no liquidity', async (t) => {
  const api = await marketStandIn(t, () => ({ body: { liquidityAvailable: false, zid: '0xabc' } }))
  const out = okBody(
    await runInline(
      handler,
      { chainId: '1', sellToken: USDC, buyToken: WETH, sellAmount: '1' },
      { from: 'query', providers: { ZEROX_API_URL: api.url, ZEROX_API_KEY: 'k' } },
    ),
  )
  t.match(out, { liquidityAvailable: false, chainId: 1, zid: '0xabc' })
  t.equal(out.buyAmount, undefined)
  t.equal(api.last().query.get('chainId'), '1')
  t.equal(api.last().query.has('taker'), false)
})

t.test('0x refuses a parameter: 422 naming it', async (t) => {
  const api = await marketStandIn(t, () => ({
    status: 400,
    body: {
      name: 'INPUT_INVALID',
      message: 'Validation Failed',
      data: { zid: '0x1', details: [{ field: 'chainId', reason: 'Chain 99999 is not supported' }] },
    },
  }))
  const out = await runInline(
    handler,
    { chainId: 99999, sellToken: USDC, buyToken: WETH, sellAmount: '1' },
    { providers: { ZEROX_API_URL: api.url, ZEROX_API_KEY: 'k' } },
  )
  t.match(out, { ok: false, status: 422, field: 'chainId', message: /Chain 99999 is not supported/ })
})

t.test('bad input: 400 naming the field', async (t) => {
  const providers = { ZEROX_API_URL: 'http://127.0.0.1:1', ZEROX_API_KEY: 'k' }
  t.match(await runInline(handler, { buyToken: WETH, sellAmount: '1' }, { providers }), {
    ok: false,
    status: 400,
    field: 'sellToken',
  })
  t.match(await runInline(handler, { sellToken: 'USDC', buyToken: WETH, sellAmount: '1' }, { providers }), {
    ok: false,
    status: 400,
    field: 'sellToken',
  })
  t.match(await runInline(handler, { sellToken: USDC, buyToken: WETH, sellAmount: '-1' }, { providers }), {
    ok: false,
    status: 400,
    field: 'sellAmount',
  })
  t.match(
    await runInline(
      handler,
      { sellToken: USDC, buyToken: USDC.toUpperCase().replace('0X', '0x'), sellAmount: '1' },
      { providers },
    ),
    { ok: false, status: 400, field: 'buyToken' },
  )
  t.match(
    await runInline(handler, { sellToken: USDC, buyToken: WETH, sellAmount: '1', taker: '0x12' }, { providers }),
    { ok: false, status: 400, field: 'taker' },
  )
  t.match(await runInline(handler, { sellToken: USDC, buyToken: WETH, sellAmount: '1', chainId: 0 }, { providers }), {
    ok: false,
    status: 400,
    field: 'chainId',
  })
})

t.test('provider problems', async (t) => {
  await t.rejects(runInline(handler, handler.example, { providers: {} }), { code: 'upstream_not_configured' })
  const api = await marketStandIn(t, () => ({
    status: 401,
    body: { name: 'UNAUTHORIZED', message: 'Invalid API key' },
  }))
  await t.rejects(
    runInline(handler, handler.example, { providers: { ZEROX_API_URL: api.url } }),
    { code: 'upstream_not_configured', message: /ZEROX_API_KEY/ },
    'the key is required',
  )
  await t.rejects(
    runInline(handler, handler.example, { providers: { ZEROX_API_URL: api.url, ZEROX_API_KEY: 'bad' } }),
    { code: 'upstream_failed' },
    'a refused key is a provider failure',
  )
  api.route(() => ({ status: 500, body: { name: 'INTERNAL_SERVER_ERROR' } }))
  await t.rejects(runInline(handler, handler.example, { providers: { ZEROX_API_URL: api.url, ZEROX_API_KEY: 'k' } }), {
    code: 'upstream_failed',
  })
  api.route(() => ({ body: { liquidityAvailable: true } }))
  await t.rejects(runInline(handler, handler.example, { providers: { ZEROX_API_URL: api.url, ZEROX_API_KEY: 'k' } }), {
    code: 'upstream_failed',
    message: /without amounts/,
  })
})

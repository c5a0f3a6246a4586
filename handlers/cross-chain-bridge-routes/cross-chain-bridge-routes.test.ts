import t from 'tap'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import { marketStandIn } from '../../test/helpers/market-stand-in.js'
import { compileInputValidator } from '../../src/pool/input-validator.js'
import handler from './index.js'

const USDC_ETH = '0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48'
const USDC_BASE = '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913'
const usdcEth = { address: USDC_ETH, symbol: 'USDC', decimals: 6, chainId: 1, name: 'USD Coin', priceUSD: '0.9999' }
const usdcBase = {
  address: USDC_BASE,
  symbol: 'USDC',
  decimals: 6,
  chainId: 8453,
  name: 'USD Coin',
  priceUSD: '0.9998',
}
const eth = {
  address: '0x0000000000000000000000000000000000000000',
  symbol: 'ETH',
  decimals: 18,
  chainId: 1,
  priceUSD: '3500',
}

// the documented shape of https://docs.li.fi/api-reference/advanced/get-a-set-of-routes-for-a-request-that-describes-a-transfer-of-tokens
const routesAnswer = {
  routes: [
    {
      id: 'route-across',
      fromChainId: 1,
      fromAmountUSD: '99.99',
      fromAmount: '100000000',
      fromToken: usdcEth,
      toChainId: 8453,
      toAmountUSD: '99.70',
      toAmount: '99720000',
      toAmountMin: '99221400',
      toToken: usdcBase,
      gasCostUSD: '1.75',
      containsSwitchChain: false,
      tags: ['RECOMMENDED', 'CHEAPEST', 'FASTEST'],
      steps: [
        {
          id: 's1',
          type: 'lifi',
          tool: 'across',
          toolDetails: { key: 'across', name: 'Across', logoURI: 'https://example.invalid/across.svg' },
          action: {
            fromChainId: 1,
            toChainId: 8453,
            fromToken: usdcEth,
            toToken: usdcBase,
            fromAmount: '100000000',
            slippage: 0.005,
          },
          estimate: {
            tool: 'across',
            fromAmount: '100000000',
            toAmount: '99720000',
            toAmountMin: '99221400',
            executionDuration: 52,
            feeCosts: [
              {
                name: 'LIFI Fixed Fee',
                description: 'Fixed LI.FI fee',
                token: usdcEth,
                amount: '250000',
                amountUSD: '0.25',
                percentage: '0.0025',
                included: true,
              },
              {
                name: 'Relayer fee',
                token: usdcEth,
                amount: '30000',
                amountUSD: '0.03',
                percentage: '0.0003',
                included: true,
              },
            ],
            gasCosts: [
              {
                type: 'SEND',
                price: '10000000000',
                estimate: '140000',
                limit: '180000',
                amount: '500000000000000',
                amountUSD: '1.75',
                token: eth,
              },
            ],
          },
          includedSteps: [
            {
              id: 'i1',
              type: 'cross',
              tool: 'across',
              toolDetails: { key: 'across', name: 'Across' },
              action: { fromChainId: 1, toChainId: 8453, fromToken: usdcEth, toToken: usdcBase },
              estimate: { toAmount: '99720000' },
            },
          ],
        },
      ],
    },
    {
      id: 'route-stargate',
      fromAmount: '100000000',
      fromAmountUSD: '99.99',
      toAmount: '99500000',
      toAmountMin: '99002500',
      toAmountUSD: '99.48',
      gasCostUSD: '3.10',
      tags: [],
      steps: [
        {
          type: 'swap',
          tool: 'uniswap',
          toolDetails: { name: 'Uniswap V3' },
          action: { fromChainId: 1, toChainId: 1, fromToken: usdcEth, toToken: eth },
          estimate: {
            toAmount: '28000000000000000',
            executionDuration: 30,
            feeCosts: [],
            gasCosts: [{ type: 'SEND', amountUSD: '1.2', amount: '1', token: eth }],
          },
        },
        {
          type: 'cross',
          tool: 'stargateV2',
          toolDetails: { name: 'StargateV2' },
          action: { fromChainId: 1, toChainId: 8453 },
          estimate: {
            toAmount: '99500000',
            toAmountMin: '99002500',
            executionDuration: 180,
            feeCosts: [{ name: 'Bridge fee', amount: '1', amountUSD: null }],
            gasCosts: [],
          },
        },
      ],
    },
  ],
  unavailableRoutes: { filteredOut: [{ overallPath: 'x' }], failed: [] },
}

t.test('routes map tools, amounts, fees, gas and duration', async (t) => {
  t.equal(
    compileInputValidator(handler).validate(structuredClone(handler.example), 'body'),
    null,
    'the example is valid',
  )
  const api = await marketStandIn(t, (req) =>
    req.path === '/v1/advanced/routes' && req.method === 'POST' ? { body: routesAnswer } : undefined,
  )
  const input = {
    fromChain: 1,
    toChain: 8453,
    fromToken: USDC_ETH,
    toToken: USDC_BASE,
    fromAmount: '100000000',
    fromAddress: '0x70a9f34f9b34c64957b9c401a97bfed35b95049e',
    slippageBps: 50,
    order: 'CHEAPEST',
  }
  const out = okBody(
    await runInline(handler, input, { providers: { LIFI_API_URL: api.url, LIFI_API_KEY: 'lifi-key' } }),
  )
  t.match(out, {
    source: 'lifi',
    fromChain: 1,
    toChain: 8453,
    routeCount: 2,
    unavailable: { filteredOut: 1, failed: 0 },
  })
  t.same(out.fromToken, { address: USDC_ETH, symbol: 'USDC', decimals: 6, chainId: 1, priceUSD: 0.9999 })
  const [a, b] = out.routes
  t.match(a, {
    id: 'route-across',
    tags: ['RECOMMENDED', 'CHEAPEST', 'FASTEST'],
    tools: ['Across'],
    toAmount: '99720000',
    toAmountMin: '99221400',
    toAmountUSD: 99.7,
    fromAmountUSD: 99.99,
    gasCostUSD: 1.75,
    feeCostUSD: 0.28,
    executionDurationSeconds: 52,
  })
  t.same(a.steps[0].feeCosts[0], {
    name: 'LIFI Fixed Fee',
    token: 'USDC',
    amount: '250000',
    amountUSD: 0.25,
    percentage: 0.0025,
    included: true,
  })
  t.same(a.steps[0].gasCosts[0], { name: 'SEND', token: 'ETH', amount: '500000000000000', amountUSD: 1.75 })
  t.same(a.steps[0].includedSteps[0], {
    type: 'cross',
    tool: 'Across',
    fromChainId: 1,
    toChainId: 8453,
    fromToken: 'USDC',
    toToken: 'USDC',
    toAmount: '99720000',
  })
  t.match(b, {
    id: 'route-stargate',
    tools: ['Uniswap V3', 'StargateV2'],
    executionDurationSeconds: 210,
    feeCostUSD: null,
    gasCostUSD: 3.1,
  })

  const req = api.last()
  t.equal(req.method, 'POST')
  t.same(req.json, {
    fromChainId: 1,
    toChainId: 8453,
    fromTokenAddress: USDC_ETH,
    toTokenAddress: USDC_BASE,
    fromAmount: '100000000',
    fromAddress: '0x70a9f34f9b34c64957b9c401a97bfed35b95049e',
    options: { slippage: 0.005, order: 'CHEAPEST' },
  })
  t.equal(req.headers['x-lifi-api-key'], 'lifi-key')
  t.match(req.headers['content-type'], /application\/json/)
})

t.test('maxRoutes, GET input and no routes', async (t) => {
  const api = await marketStandIn(t, () => ({ body: routesAnswer }))
  const out = okBody(
    await runInline(
      handler,
      {
        fromChain: '1',
        toChain: '8453',
        fromToken: USDC_ETH,
        toToken: USDC_BASE,
        fromAmount: '100000000',
        maxRoutes: '1',
      },
      { from: 'query', providers: { LIFI_API_URL: api.url } },
    ),
  )
  t.equal(out.routes.length, 1)
  t.equal(out.routeCount, 2)
  t.same(
    api.last().json,
    { fromChainId: 1, toChainId: 8453, fromTokenAddress: USDC_ETH, toTokenAddress: USDC_BASE, fromAmount: '100000000' },
    'no options when none given',
  )
  t.equal(api.last().headers['x-lifi-api-key'], undefined)
  api.route(() => ({ body: { routes: [], unavailableRoutes: { filteredOut: [], failed: [{ overallPath: 'y' }] } } }))
  const none = okBody(
    await runInline(
      handler,
      { fromChain: 1, toChain: 8453, fromToken: USDC_ETH, toToken: USDC_BASE, fromAmount: '1' },
      { providers: { LIFI_API_URL: api.url } },
    ),
  )
  t.match(none, { routeCount: 0, routes: [], unavailable: { failed: 1 }, note: /no route/ })
})

t.test('LI.FI refuses the request: 422', async (t) => {
  const api = await marketStandIn(t, () => ({ status: 400, body: { message: 'Unknown chain 999', code: 1011 } }))
  t.match(
    await runInline(
      handler,
      { fromChain: 999, toChain: 8453, fromToken: USDC_ETH, toToken: USDC_BASE, fromAmount: '1' },
      { providers: { LIFI_API_URL: api.url } },
    ),
    { ok: false, status: 422, message: /Unknown chain 999/ },
  )
})

t.test('bad input: 400 naming the field', async (t) => {
  const providers = { LIFI_API_URL: 'http://127.0.0.1:1' }
  const ok = { fromChain: 1, toChain: 8453, fromToken: USDC_ETH, toToken: USDC_BASE, fromAmount: '1' }
  t.match(await runInline(handler, { ...ok, fromChain: undefined }, { providers }), {
    ok: false,
    status: 400,
    field: 'fromChain',
  })
  t.match(await runInline(handler, { ...ok, fromToken: 'USDC' }, { providers }), {
    ok: false,
    status: 400,
    field: 'fromToken',
  })
  t.match(await runInline(handler, { ...ok, fromAmount: '0' }, { providers }), {
    ok: false,
    status: 400,
    field: 'fromAmount',
  })
  t.match(await runInline(handler, { ...ok, maxRoutes: 11 }, { providers }), {
    ok: false,
    status: 400,
    field: 'maxRoutes',
  })
  t.match(await runInline(handler, { ...ok, order: 'SAFEST' }, { providers }), {
    ok: false,
    status: 400,
    field: 'order',
  })
  t.match(await runInline(handler, { ...ok, toChain: 1, toToken: USDC_ETH.toLowerCase() }, { providers }), {
    ok: false,
    status: 400,
    field: 'toToken',
  })
})

t.test('provider problems', async (t) => {
  await t.rejects(runInline(handler, handler.example, { providers: {} }), { code: 'upstream_not_configured' })
  const api = await marketStandIn(t, () => ({ status: 500, body: { message: 'internal' } }))
  await t.rejects(runInline(handler, handler.example, { providers: { LIFI_API_URL: api.url } }), {
    code: 'upstream_failed',
  })
  api.route(() => ({ body: '<<<' }))
  await t.rejects(runInline(handler, handler.example, { providers: { LIFI_API_URL: api.url } }), {
    code: 'upstream_failed',
  })
  api.route(() => ({ body: { routes: 'none' } }))
  await t.rejects(runInline(handler, handler.example, { providers: { LIFI_API_URL: api.url } }), {
    code: 'upstream_failed',
    message: /routes list/,
  })
})

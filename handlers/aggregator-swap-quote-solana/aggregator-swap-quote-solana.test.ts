import t from 'tap'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import { marketStandIn } from '../../test/helpers/market-stand-in.js'
import { compileInputValidator } from '../../src/pool/input-validator.js'
import handler from './index.js'

const SOL = 'So11111111111111111111111111111111111111112'
const USDC = 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v'
const BONK = 'DezXAZ8z7PnrnRJjz3wXBoRgixCa6xjnB7YaB1pPB263'

// the documented shape of https://dev.jup.ag/docs/api/swap-api/quote
const quote = {
  inputMint: SOL,
  inAmount: '1000000000',
  outputMint: USDC,
  outAmount: '161987530',
  otherAmountThreshold: '161177592',
  swapMode: 'ExactIn',
  slippageBps: 50,
  platformFee: null,
  priceImpactPct: '0.0002',
  routePlan: [
    {
      swapInfo: {
        ammKey: '5BKxfWMbmYBAEWvyPZS9esPducUba9GqyMjtLCfbaqyF',
        label: 'Meteora DLMM',
        inputMint: SOL,
        outputMint: USDC,
        inAmount: '700000000',
        outAmount: '113391271',
        feeAmount: '24825',
        feeMint: SOL,
      },
      percent: 70,
    },
    {
      swapInfo: {
        ammKey: 'Czfq3xZZDmsdGdUyrNLtRhGc47cXcZtLG4crryfu44zE',
        label: 'Orca Whirlpool',
        inputMint: SOL,
        outputMint: USDC,
        inAmount: '300000000',
        outAmount: '48596259',
        feeAmount: '15000',
        feeMint: SOL,
      },
      percent: 30,
    },
  ],
  contextSlot: 299283763,
  timeTaken: 0.015,
  swapUsdValue: '161.98',
}

t.test('a quote maps amounts, impact and the route', async (t) => {
  t.equal(
    compileInputValidator(handler).validate(structuredClone(handler.example), 'body'),
    null,
    'the example is valid',
  )
  const api = await marketStandIn(t, (req) => (req.path === '/swap/v1/quote' ? { body: quote } : undefined))
  const out = okBody(
    await runInline(handler, handler.example, { providers: { JUPITER_API_URL: api.url, JUPITER_API_KEY: 'jup-key' } }),
  )
  t.match(out, {
    source: 'jupiter',
    routeFound: true,
    swapMode: 'ExactIn',
    inAmount: '1000000000',
    outAmount: '161987530',
    otherAmountThreshold: '161177592',
    slippageBps: 50,
    priceImpactPct: 0.0002,
    swapUsdValue: 161.98,
    contextSlot: 299283763,
  })
  t.same(
    out.routePlan.map((s: any) => [s.venue, s.percent, s.outAmount]),
    [
      ['Meteora DLMM', 70, '113391271'],
      ['Orca Whirlpool', 30, '48596259'],
    ],
  )
  t.equal(out.routePlan[0].ammKey, '5BKxfWMbmYBAEWvyPZS9esPducUba9GqyMjtLCfbaqyF')
  t.same(out.amounts, { in: '1', out: '161.98753', otherAmountThreshold: '161.177592' })
  t.equal(out.price, 161.98753)
  t.equal(out.priceImpactPercent, 0.02, 'priceImpactPct 0.0002 is a fraction: 0.02 %')

  const req = api.last()
  t.equal(req.path, '/swap/v1/quote')
  t.equal(req.query.get('inputMint'), SOL)
  t.equal(req.query.get('outputMint'), USDC)
  t.equal(req.query.get('amount'), '1000000000')
  t.equal(req.query.get('slippageBps'), '50')
  t.equal(req.query.get('swapMode'), 'ExactIn')
  t.equal(req.query.has('onlyDirectRoutes'), false, 'unset options are not sent')
  t.equal(req.headers['x-api-key'], 'jup-key')
})

t.test('GET input, options and no decimals', async (t) => {
  const api = await marketStandIn(t, () => ({ body: { ...quote, swapMode: 'ExactOut' } }))
  const out = okBody(
    await runInline(
      handler,
      {
        inputMint: SOL,
        outputMint: USDC,
        amount: '5000000',
        swapMode: 'ExactOut',
        slippageBps: '100',
        onlyDirectRoutes: 'true',
      },
      { from: 'query', providers: { JUPITER_API_URL: api.url } },
    ),
  )
  t.equal(out.swapMode, 'ExactOut')
  t.equal(out.amounts, undefined, 'no decimals given: base units only')
  t.equal(api.last().query.get('slippageBps'), '100')
  t.equal(api.last().query.get('onlyDirectRoutes'), 'true')
  t.equal(api.last().headers['x-api-key'], undefined)
})

t.test('no route and untradable tokens', async (t) => {
  const api = await marketStandIn(t, () => ({
    status: 400,
    body: { error: 'Could not find any route', errorCode: 'COULD_NOT_FIND_ANY_ROUTE' },
  }))
  const providers = { JUPITER_API_URL: api.url }
  t.match(okBody(await runInline(handler, { inputMint: SOL, outputMint: BONK, amount: '1' }, { providers })), {
    routeFound: false,
    reason: 'Could not find any route',
    errorCode: 'COULD_NOT_FIND_ANY_ROUTE',
  })
  api.route(() => ({
    status: 400,
    body: { error: `The token ${BONK} is not tradable`, errorCode: 'TOKEN_NOT_TRADABLE' },
  }))
  t.match(await runInline(handler, { inputMint: SOL, outputMint: BONK, amount: '1' }, { providers }), {
    ok: false,
    status: 422,
    field: 'outputMint',
  })
})

t.test('bad input: 400 naming the field', async (t) => {
  const providers = { JUPITER_API_URL: 'http://127.0.0.1:1' }
  t.match(await runInline(handler, { inputMint: SOL, amount: '1' }, { providers }), {
    ok: false,
    status: 400,
    field: 'outputMint',
  })
  t.match(await runInline(handler, { inputMint: '0xabc', outputMint: USDC, amount: '1' }, { providers }), {
    ok: false,
    status: 400,
    field: 'inputMint',
  })
  t.match(await runInline(handler, { inputMint: SOL, outputMint: USDC, amount: '1.5' }, { providers }), {
    ok: false,
    status: 400,
    field: 'amount',
  })
  t.match(await runInline(handler, { inputMint: SOL, outputMint: USDC, amount: '0' }, { providers }), {
    ok: false,
    status: 400,
    field: 'amount',
  })
  t.match(
    await runInline(handler, { inputMint: SOL, outputMint: USDC, amount: '99999999999999999999' }, { providers }),
    { ok: false, status: 400, field: 'amount' },
    'over u64',
  )
  t.match(await runInline(handler, { inputMint: SOL, outputMint: SOL, amount: '1' }, { providers }), {
    ok: false,
    status: 400,
    field: 'outputMint',
  })
  t.match(
    await runInline(handler, { inputMint: SOL, outputMint: USDC, amount: '1', slippageBps: 10001 }, { providers }),
    { ok: false, status: 400, field: 'slippageBps' },
  )
})

t.test('provider problems', async (t) => {
  await t.rejects(runInline(handler, handler.example, { providers: {} }), { code: 'upstream_not_configured' })
  const api = await marketStandIn(t, () => ({ status: 500, body: { error: 'boom' } }))
  const providers = { JUPITER_API_URL: api.url }
  await t.rejects(runInline(handler, handler.example, { providers }), { code: 'upstream_failed' })
  api.route(() => ({ body: 'garbage' }))
  await t.rejects(runInline(handler, handler.example, { providers }), { code: 'upstream_failed' })
  api.route(() => ({ body: { something: 'else' } }))
  await t.rejects(runInline(handler, handler.example, { providers }), {
    code: 'upstream_failed',
    message: /without amounts/,
  })
})

// priceImpactPct is a fraction despite its name: "a decimal from 0 to 1, not a percentage ... 0.01
// means 1% price impact" (jup-ag/docs guides/how-to-build-a-custom-swap-with-metis.mdx)
t.test('price impact: the fraction as Jupiter sends it, and the same in percent', async (t) => {
  const api = await marketStandIn(t, () => ({ body: { ...quote, priceImpactPct: '0.0123' } }))
  const out = okBody(await runInline(handler, handler.example, { providers: { JUPITER_API_URL: api.url } }))
  t.equal(out.priceImpactPct, 0.0123)
  t.equal(out.priceImpactPercent, 1.23, '0.0123 is 1.23 %')
  api.route(() => ({ body: { ...quote, priceImpactPct: 'n/a' } }))
  t.match(okBody(await runInline(handler, handler.example, { providers: { JUPITER_API_URL: api.url } })), {
    priceImpactPct: null,
    priceImpactPercent: null,
  })
})

t.test('a route plan with a null or non-object step is a 502, not a crash', async (t) => {
  const api = await marketStandIn(t, () => ({ body: { ...quote, routePlan: [quote.routePlan[0], null] } }))
  await t.rejects(runInline(handler, handler.example, { providers: { JUPITER_API_URL: api.url } }), {
    code: 'upstream_failed',
    message: /route plan/,
  })
  api.route(() => ({ body: { ...quote, routePlan: ['Orca'] } }))
  await t.rejects(runInline(handler, handler.example, { providers: { JUPITER_API_URL: api.url } }), {
    code: 'upstream_failed',
    message: /route plan/,
  })
})

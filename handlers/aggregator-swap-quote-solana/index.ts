import { formatUnits, unitPrice } from '../_shared/market-amounts.js'
import { callProvider, joinUrl, optionalSetting, providerSetting } from '../_shared/outbound.js'
import { defineHandler, HandlerInputError, HandlerUpstreamError } from '../../src/pool/handler-contract.js'

interface Input {
  inputMint: string
  outputMint: string
  amount: string
  slippageBps?: number
  swapMode?: 'ExactIn' | 'ExactOut'
  onlyDirectRoutes?: boolean
  restrictIntermediateTokens?: boolean
  inputDecimals?: number
  outputDecimals?: number
}

interface JupiterQuote {
  inputMint?: string
  inAmount?: string
  outputMint?: string
  outAmount?: string
  otherAmountThreshold?: string
  swapMode?: string
  slippageBps?: number
  platformFee?: unknown
  priceImpactPct?: string
  routePlan?: Array<{
    swapInfo?: {
      ammKey?: string
      label?: string
      inputMint?: string
      outputMint?: string
      inAmount?: string
      outAmount?: string
      feeAmount?: string
      feeMint?: string
    }
    percent?: number
    bps?: number
  } | null>
  contextSlot?: number
  timeTaken?: number
  swapUsdValue?: string
  error?: string
  errorCode?: string
}

const MINT = '^[1-9A-HJ-NP-Za-km-z]{32,44}$'
/** Jupiter's "no route" answers (HTTP 400 with these error codes). */
const NO_ROUTE = new Set(['COULD_NOT_FIND_ANY_ROUTE', 'NO_ROUTES_FOUND', 'ROUTE_PLAN_DOES_NOT_CONSUME_ALL_THE_AMOUNT'])

/**
 * A Solana swap quote from the Jupiter aggregator, `GET /swap/v1/quote`.
 * Request and response shape: https://dev.jup.ag/docs/api/swap-api/quote: inAmount/outAmount/otherAmountThreshold as
 * base-unit strings, priceImpactPct as a decimal string that is a fraction despite its name
 * (0.01 = 1 %), routePlan[] of { swapInfo: { ammKey, label,
 * inputMint, outputMint, inAmount, outAmount, feeAmount, feeMint }, percent }, contextSlot.
 * Errors are HTTP 400 with { error, errorCode } (e.g. COULD_NOT_FIND_ANY_ROUTE, TOKEN_NOT_TRADABLE).
 * JUPITER_API_KEY, when set, is sent as `x-api-key`, Jupiter's API-key header (the keyless
 * lite-api.jup.ag needs none; a keyed deployment points JUPITER_API_URL at https://api.jup.ag).
 */
export default defineHandler<Input>({
  slug: 'aggregator-swap-quote-solana',
  description:
    'Best swap route on Solana from the Jupiter aggregator for an amount of one token into another: input and output amounts, minimum received after slippage, price impact and the route through each DEX (venue, share, fees).',
  providers: ['JUPITER_API_URL'],
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    required: ['inputMint', 'outputMint', 'amount'],
    properties: {
      inputMint: {
        type: 'string',
        pattern: MINT,
        description:
          'Mint address of the token sold (base58), e.g. So11111111111111111111111111111111111111112 for wrapped SOL.',
      },
      outputMint: {
        type: 'string',
        pattern: MINT,
        description:
          'Mint address of the token bought (base58), e.g. EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v for USDC.',
      },
      amount: {
        type: 'string',
        pattern: '^[1-9][0-9]{0,19}$',
        description:
          'Amount in base units of the input token (of the output token with swapMode ExactOut), e.g. "1000000000" for 1 SOL (9 decimals).',
      },
      slippageBps: {
        type: 'integer',
        minimum: 0,
        maximum: 10000,
        default: 50,
        description: 'Slippage tolerance in basis points (50 = 0.5%); default 50.',
      },
      swapMode: {
        type: 'string',
        enum: ['ExactIn', 'ExactOut'],
        default: 'ExactIn',
        description: 'ExactIn: amount is what you sell; ExactOut: amount is what you want to receive. Default ExactIn.',
      },
      onlyDirectRoutes: { type: 'boolean', description: 'Only single-hop routes (one pool).' },
      restrictIntermediateTokens: {
        type: 'boolean',
        description: 'Route only through highly liquid intermediate tokens (Jupiter recommends true).',
      },
      inputDecimals: {
        type: 'integer',
        minimum: 0,
        maximum: 18,
        description:
          'Decimals of the input token, to add human-readable amounts and a price (Jupiter quotes base units only).',
      },
      outputDecimals: {
        type: 'integer',
        minimum: 0,
        maximum: 18,
        description: 'Decimals of the output token (see inputDecimals).',
      },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      'source ("jupiter"), routeFound (false with reason when Jupiter finds no route), swapMode, inputMint, outputMint, inAmount and outAmount (base-unit strings), otherAmountThreshold (ExactIn: the minimum received after slippage; ExactOut: the maximum spent), slippageBps, priceImpactPct (as Jupiter reports it: a fraction despite the name, 0.01 = 1 %), priceImpactPercent (the same in percent, 1 = 1 %), swapUsdValue (when Jupiter gives it), routePlan[] { venue (AMM label), ammKey, inputMint, outputMint, inAmount, outAmount, feeAmount, feeMint, percent (share of the amount routed through this step) }, contextSlot; with inputDecimals and outputDecimals also amounts { in, out, otherAmountThreshold } in token units and price (output per input token).',
    schema: {
      type: 'object',
      properties: {
        source: { type: 'string' },
        routeFound: { type: 'boolean' },
        reason: { type: 'string' },
        inAmount: { type: 'string' },
        outAmount: { type: 'string' },
        otherAmountThreshold: { type: 'string' },
        priceImpactPct: { type: ['number', 'null'] },
        priceImpactPercent: { type: ['number', 'null'] },
        routePlan: { type: 'array', items: { type: 'object' } },
        amounts: { type: 'object' },
        price: { type: ['number', 'null'] },
      },
    },
    example: {
      source: 'jupiter',
      swapMode: 'ExactIn',
      inputMint: 'So11111111111111111111111111111111111111112',
      outputMint: 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v',
      routeFound: true,
      inAmount: '1000000000',
      outAmount: '161987530',
      otherAmountThreshold: '161177592',
      slippageBps: 50,
      priceImpactPct: 0.0002,
      priceImpactPercent: 0.02,
      swapUsdValue: 161.98,
      routePlan: [
        {
          venue: 'Meteora DLMM',
          ammKey: '5BKxfWMbmYBAEWvyPZS9esPducUba9GqyMjtLCfbaqyF',
          inputMint: 'So11111111111111111111111111111111111111112',
          outputMint: 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v',
          inAmount: '700000000',
          outAmount: '113391271',
          feeAmount: '24825',
          feeMint: 'So11111111111111111111111111111111111111112',
          percent: 70,
        },
        {
          venue: 'Orca Whirlpool',
          ammKey: 'Czfq3xZZDmsdGdUyrNLtRhGc47cXcZtLG4crryfu44zE',
          inputMint: 'So11111111111111111111111111111111111111112',
          outputMint: 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v',
          inAmount: '300000000',
          outAmount: '48596259',
          feeAmount: '15000',
          feeMint: 'So11111111111111111111111111111111111111112',
          percent: 30,
        },
      ],
      contextSlot: 299283763,
      amounts: { in: '1', out: '161.98753', otherAmountThreshold: '161.177592' },
      price: 161.98753,
    },
  },
  example: {
    inputMint: 'So11111111111111111111111111111111111111112',
    outputMint: 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v',
    amount: '1000000000',
    slippageBps: 50,
    inputDecimals: 9,
    outputDecimals: 6,
  },
  async run(input, ctx) {
    if (input.inputMint === input.outputMint)
      throw new HandlerInputError('outputMint', 'outputMint must differ from inputMint')
    if (BigInt(input.amount) > 18446744073709551615n)
      throw new HandlerInputError('amount', 'amount exceeds the largest Solana token amount (u64)')
    const base = providerSetting(ctx, 'JUPITER_API_URL', 'Jupiter swap quotes')
    const key = optionalSetting(ctx, 'JUPITER_API_KEY')
    const swapMode = input.swapMode ?? 'ExactIn'
    const url = joinUrl(base, '/swap/v1/quote', {
      inputMint: input.inputMint,
      outputMint: input.outputMint,
      amount: input.amount,
      slippageBps: input.slippageBps ?? 50,
      swapMode,
      onlyDirectRoutes: input.onlyDirectRoutes,
      restrictIntermediateTokens: input.restrictIntermediateTokens,
    })
    const r = await callProvider('Jupiter', url, { headers: key ? { 'x-api-key': key } : {}, acceptStatus: [400, 404] })
    const q = r.json as JupiterQuote | undefined
    if (!q || typeof q !== 'object')
      throw new HandlerUpstreamError('upstream_failed', 'Jupiter answered something that is not JSON')
    const meta = { source: 'jupiter', swapMode, inputMint: input.inputMint, outputMint: input.outputMint }
    if (r.status !== 200) {
      const code = typeof q.errorCode === 'string' ? q.errorCode : ''
      const message = typeof q.error === 'string' ? q.error.slice(0, 300) : `HTTP ${r.status}`
      if (NO_ROUTE.has(code)) return { body: { ...meta, routeFound: false, reason: message, errorCode: code } }
      if (code === 'TOKEN_NOT_TRADABLE') {
        const field = message.includes(input.outputMint) ? 'outputMint' : 'inputMint'
        throw new HandlerInputError(field, `Jupiter: ${message}`, 422)
      }
      if (r.status === 400 && message)
        throw new HandlerInputError('(input)', `Jupiter refused the quote: ${message}`, 422)
      throw new HandlerUpstreamError('upstream_failed', `Jupiter answered HTTP ${r.status}`)
    }
    if (typeof q.inAmount !== 'string' || typeof q.outAmount !== 'string' || !Array.isArray(q.routePlan))
      throw new HandlerUpstreamError('upstream_failed', 'Jupiter answered a quote without amounts or route')
    // a route with a step missing is not a route we can describe (its shares would not add up): refuse it rather than skip the step
    if (q.routePlan.some((step) => step === null || typeof step !== 'object'))
      throw new HandlerUpstreamError(
        'upstream_failed',
        'Jupiter answered a route plan with a step that is not an object',
      )
    const steps = q.routePlan as Array<NonNullable<(typeof q.routePlan)[number]>>
    // priceImpactPct is a fraction (0.01 = 1 %): jup-ag/docs guides/how-to-build-a-custom-swap-with-metis.mdx ("a decimal from 0 to 1, not a percentage"), and jup-ag/terminal src/components/PriceInfo/index.tsx multiplies it by 100 to show it
    const impact = q.priceImpactPct !== undefined ? Number(q.priceImpactPct) : NaN
    const body: Record<string, unknown> = {
      ...meta,
      routeFound: true,
      swapMode: q.swapMode ?? swapMode,
      inAmount: q.inAmount,
      outAmount: q.outAmount,
      otherAmountThreshold: q.otherAmountThreshold ?? null,
      slippageBps: q.slippageBps ?? input.slippageBps ?? 50,
      priceImpactPct: Number.isFinite(impact) ? impact : null,
      priceImpactPercent: Number.isFinite(impact) ? Number((impact * 100).toPrecision(12)) : null,
      swapUsdValue:
        q.swapUsdValue !== undefined && Number.isFinite(Number(q.swapUsdValue)) ? Number(q.swapUsdValue) : null,
      routePlan: steps.map((step) => ({
        venue: step.swapInfo?.label ?? null,
        ammKey: step.swapInfo?.ammKey ?? null,
        inputMint: step.swapInfo?.inputMint ?? null,
        outputMint: step.swapInfo?.outputMint ?? null,
        inAmount: step.swapInfo?.inAmount ?? null,
        outAmount: step.swapInfo?.outAmount ?? null,
        feeAmount: step.swapInfo?.feeAmount ?? null,
        feeMint: step.swapInfo?.feeMint ?? null,
        percent: typeof step.percent === 'number' ? step.percent : typeof step.bps === 'number' ? step.bps / 100 : null,
      })),
      contextSlot: q.contextSlot ?? null,
    }
    if (input.inputDecimals !== undefined && input.outputDecimals !== undefined) {
      const threshold = q.otherAmountThreshold ?? ''
      body.amounts = {
        in: formatUnits(q.inAmount, input.inputDecimals) ?? null,
        out: formatUnits(q.outAmount, input.outputDecimals) ?? null,
        otherAmountThreshold:
          formatUnits(
            threshold,
            (q.swapMode ?? swapMode) === 'ExactOut' ? input.inputDecimals : input.outputDecimals,
          ) ?? null,
      }
      body.price = unitPrice(q.inAmount, input.inputDecimals, q.outAmount, input.outputDecimals)
    }
    return { body }
  },
})

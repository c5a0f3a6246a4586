import { callProvider, joinUrl, optionalSetting, providerSetting } from '../_shared/outbound.js'
import { defineHandler, HandlerInputError, HandlerUpstreamError } from '../../src/pool/handler-contract.js'

interface Input {
  fromChain: number
  toChain: number
  fromToken: string
  toToken: string
  fromAmount: string
  fromAddress?: string
  toAddress?: string
  slippageBps?: number
  order?: 'CHEAPEST' | 'FASTEST'
  maxRoutes?: number
}

interface LifiToken {
  address?: string
  symbol?: string
  decimals?: number
  chainId?: number
  priceUSD?: string
  name?: string
}
interface LifiCost {
  name?: string
  type?: string
  description?: string
  token?: LifiToken
  amount?: string
  amountUSD?: string
  percentage?: string
  included?: boolean
}
interface LifiStep {
  id?: string
  type?: string
  tool?: string
  toolDetails?: { key?: string; name?: string }
  action?: {
    fromChainId?: number
    toChainId?: number
    fromToken?: LifiToken
    toToken?: LifiToken
    fromAmount?: string
    slippage?: number
  }
  estimate?: {
    fromAmount?: string
    toAmount?: string
    toAmountMin?: string
    executionDuration?: number
    feeCosts?: LifiCost[]
    gasCosts?: LifiCost[]
    fromAmountUSD?: string
    toAmountUSD?: string
  }
  includedSteps?: LifiStep[]
}
interface LifiRoute {
  id?: string
  fromChainId?: number
  toChainId?: number
  fromToken?: LifiToken
  toToken?: LifiToken
  fromAmount?: string
  fromAmountUSD?: string
  toAmount?: string
  toAmountMin?: string
  toAmountUSD?: string
  gasCostUSD?: string
  tags?: string[]
  steps?: LifiStep[]
}

const TOKEN = '^(0x[0-9a-fA-F]{40}|[1-9A-HJ-NP-Za-km-z]{32,44})$'

const usdNumber = (v: unknown): number | null =>
  (typeof v === 'string' || typeof v === 'number') && v !== '' && Number.isFinite(Number(v)) ? Number(v) : null
const token = (tk: LifiToken | undefined) =>
  tk
    ? {
        address: tk.address ?? null,
        symbol: tk.symbol ?? null,
        decimals: tk.decimals ?? null,
        chainId: tk.chainId ?? null,
        priceUSD: usdNumber(tk.priceUSD),
      }
    : null
const cost = (c: LifiCost) => ({
  name: c.name ?? c.type ?? null,
  token: c.token?.symbol ?? null,
  amount: c.amount ?? null,
  amountUSD: usdNumber(c.amountUSD),
  ...(c.percentage !== undefined ? { percentage: usdNumber(c.percentage) } : {}),
  ...(c.included !== undefined ? { included: c.included } : {}),
})

/** One step as sold: its own tool and those it bundles (LI.FI "lifi" steps carry includedSteps). */
function step(s: LifiStep) {
  const inner = (s.includedSteps ?? []).map((i) => ({
    type: i.type ?? null,
    tool: i.toolDetails?.name ?? i.tool ?? null,
    fromChainId: i.action?.fromChainId ?? null,
    toChainId: i.action?.toChainId ?? null,
    fromToken: i.action?.fromToken?.symbol ?? null,
    toToken: i.action?.toToken?.symbol ?? null,
    toAmount: i.estimate?.toAmount ?? null,
  }))
  return {
    type: s.type ?? null,
    tool: s.toolDetails?.name ?? s.tool ?? null,
    toolKey: s.tool ?? null,
    fromChainId: s.action?.fromChainId ?? null,
    toChainId: s.action?.toChainId ?? null,
    fromToken: s.action?.fromToken?.symbol ?? null,
    toToken: s.action?.toToken?.symbol ?? null,
    fromAmount: s.estimate?.fromAmount ?? s.action?.fromAmount ?? null,
    toAmount: s.estimate?.toAmount ?? null,
    toAmountMin: s.estimate?.toAmountMin ?? null,
    executionDurationSeconds: typeof s.estimate?.executionDuration === 'number' ? s.estimate.executionDuration : null,
    feeCosts: (s.estimate?.feeCosts ?? []).map(cost),
    gasCosts: (s.estimate?.gasCosts ?? []).map(cost),
    includedSteps: inner,
  }
}

/** The sum of the listed USD amounts; null when one of them has none. */
function sumUsd(costs: Array<{ amountUSD: number | null }>): number | null {
  if (costs.some((c) => c.amountUSD === null)) return null
  return Math.round(costs.reduce((a, c) => a + (c.amountUSD ?? 0), 0) * 1e6) / 1e6
}

/**
 * Cross-chain routes from LI.FI, `POST /v1/advanced/routes`.
 * Request and response shape: https://docs.li.fi/api-reference/advanced/get-a-set-of-routes-for-a-request-that-describes-a-transfer-of-tokens
 * (body { fromChainId, toChainId, fromTokenAddress, toTokenAddress, fromAmount, fromAddress?,
 * toAddress?, options { slippage, order } }; answer { routes[] { id, fromAmount(USD), toAmount(USD),
 * toAmountMin, gasCostUSD, tags, steps[] { type, tool, toolDetails, action, estimate { toAmount,
 * toAmountMin, executionDuration, feeCosts[], gasCosts[] }, includedSteps[] } }, unavailableRoutes }).
 * LIFI_API_KEY, when set, is sent as `x-lifi-api-key` (https://docs.li.fi/api-reference/rate-limits).
 */
export default defineHandler<Input>({
  slug: 'cross-chain-bridge-routes',
  description:
    'Routes to move a token from one chain to another (e.g. USDC from Ethereum to Base) from the LI.FI aggregator: bridges and swaps used, estimated and minimum amount received, fees and gas in USD, and how long each route takes.',
  providers: ['LIFI_API_URL'],
  timeoutMs: 20_000,
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    required: ['fromChain', 'toChain', 'fromToken', 'toToken', 'fromAmount'],
    properties: {
      fromChain: {
        type: 'integer',
        minimum: 1,
        maximum: 9007199254740991,
        description:
          'Source chain id (1 Ethereum, 8453 Base, 42161 Arbitrum, 10 Optimism, 137 Polygon, 1151111081099710 Solana, ...).',
      },
      toChain: { type: 'integer', minimum: 1, maximum: 9007199254740991, description: 'Destination chain id.' },
      fromToken: {
        type: 'string',
        pattern: TOKEN,
        description:
          'Token address on the source chain (0x0000000000000000000000000000000000000000 for the native coin on EVM chains).',
      },
      toToken: { type: 'string', pattern: TOKEN, description: 'Token address on the destination chain.' },
      fromAmount: {
        type: 'string',
        pattern: '^[1-9][0-9]{0,77}$',
        description: 'Amount to send in base units of fromToken, e.g. "100000000" for 100 USDC (6 decimals).',
      },
      fromAddress: {
        type: 'string',
        pattern: TOKEN,
        description: 'Optional sending wallet (some bridges quote only with it).',
      },
      toAddress: { type: 'string', pattern: TOKEN, description: 'Optional receiving wallet (default: fromAddress).' },
      slippageBps: {
        type: 'integer',
        minimum: 0,
        maximum: 5000,
        description: 'Slippage tolerance in basis points (50 = 0.5%); LI.FI default when omitted.',
      },
      order: {
        type: 'string',
        enum: ['CHEAPEST', 'FASTEST'],
        description: 'How LI.FI ranks routes: CHEAPEST (most received) or FASTEST.',
      },
      maxRoutes: {
        type: 'integer',
        minimum: 1,
        maximum: 10,
        default: 5,
        description: 'Routes returned (1–10); default 5.',
      },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      "source (\"lifi\"), fromChain, toChain, fromToken and toToken { address, symbol, decimals, chainId, priceUSD }, routeCount, routes[] in LI.FI's order: { id, tags (RECOMMENDED, CHEAPEST, FASTEST), tools (bridges and exchanges used), fromAmount, fromAmountUSD, toAmount (estimated received, base units), toAmountMin (minimum after slippage), toAmountUSD, gasCostUSD (as LI.FI gives it), feeCostUSD (sum of the fee amountUSD LI.FI lists; null when one is missing), executionDurationSeconds (sum of the steps' estimates), steps[] { type, tool, fromChainId, toChainId, fromToken, toToken, fromAmount, toAmount, toAmountMin, executionDurationSeconds, feeCosts[] { name, token, amount, amountUSD, percentage, included }, gasCosts[], includedSteps[] } }, unavailable (LI.FI's count of routes filtered out or failed).",
    schema: {
      type: 'object',
      properties: {
        source: { type: 'string' },
        routeCount: { type: 'integer' },
        routes: { type: 'array', items: { type: 'object' } },
        unavailable: { type: 'object' },
      },
    },
    example: {
      source: 'lifi',
      fromChain: 1,
      toChain: 8453,
      fromToken: {
        address: '0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48',
        symbol: 'USDC',
        decimals: 6,
        chainId: 1,
        priceUSD: 0.9999,
      },
      toToken: {
        address: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913',
        symbol: 'USDC',
        decimals: 6,
        chainId: 8453,
        priceUSD: 0.9998,
      },
      fromAmount: '100000000',
      routeCount: 2,
      routes: [
        {
          id: 'route-across',
          tags: ['RECOMMENDED', 'CHEAPEST', 'FASTEST'],
          tools: ['Across'],
          fromAmount: '100000000',
          fromAmountUSD: 99.99,
          toAmount: '99720000',
          toAmountMin: '99221400',
          toAmountUSD: 99.7,
          gasCostUSD: 1.75,
          feeCostUSD: 0.28,
          executionDurationSeconds: 52,
          steps: [
            {
              type: 'lifi',
              tool: 'Across',
              toolKey: 'across',
              fromChainId: 1,
              toChainId: 8453,
              fromToken: 'USDC',
              toToken: 'USDC',
              fromAmount: '100000000',
              toAmount: '99720000',
              toAmountMin: '99221400',
              executionDurationSeconds: 52,
              feeCosts: [
                {
                  name: 'LIFI Fixed Fee',
                  token: 'USDC',
                  amount: '250000',
                  amountUSD: 0.25,
                  percentage: 0.0025,
                  included: true,
                },
                {
                  name: 'Relayer fee',
                  token: 'USDC',
                  amount: '30000',
                  amountUSD: 0.03,
                  percentage: 0.0003,
                  included: true,
                },
              ],
              gasCosts: [{ name: 'SEND', token: 'ETH', amount: '500000000000000', amountUSD: 1.75 }],
              includedSteps: [
                {
                  type: 'cross',
                  tool: 'Across',
                  fromChainId: 1,
                  toChainId: 8453,
                  fromToken: 'USDC',
                  toToken: 'USDC',
                  toAmount: '99720000',
                },
              ],
            },
          ],
        },
        {
          id: 'route-stargate',
          tags: [],
          tools: ['Uniswap V3', 'StargateV2'],
          fromAmount: '100000000',
          fromAmountUSD: 99.99,
          toAmount: '99500000',
          toAmountMin: '99002500',
          toAmountUSD: 99.48,
          gasCostUSD: 3.1,
          feeCostUSD: null,
          executionDurationSeconds: 210,
          steps: [
            {
              type: 'swap',
              tool: 'Uniswap V3',
              toolKey: 'uniswap',
              fromChainId: 1,
              toChainId: 1,
              fromToken: 'USDC',
              toToken: 'ETH',
              fromAmount: null,
              toAmount: '28000000000000000',
              toAmountMin: null,
              executionDurationSeconds: 30,
              feeCosts: [],
              gasCosts: [{ name: 'SEND', token: 'ETH', amount: '1', amountUSD: 1.2 }],
              includedSteps: [],
            },
            {
              type: 'cross',
              tool: 'StargateV2',
              toolKey: 'stargateV2',
              fromChainId: 1,
              toChainId: 8453,
              fromToken: null,
              toToken: null,
              fromAmount: null,
              toAmount: '99500000',
              toAmountMin: '99002500',
              executionDurationSeconds: 180,
              feeCosts: [{ name: 'Bridge fee', token: null, amount: '1', amountUSD: null }],
              gasCosts: [],
              includedSteps: [],
            },
          ],
        },
      ],
      unavailable: { filteredOut: 1, failed: 0 },
    },
  },
  example: {
    fromChain: 1,
    toChain: 8453,
    fromToken: '0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48',
    toToken: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913',
    fromAmount: '100000000',
    maxRoutes: 3,
  },
  async run(input, ctx) {
    if (input.fromChain === input.toChain && input.fromToken.toLowerCase() === input.toToken.toLowerCase())
      throw new HandlerInputError('toToken', 'the same token on the same chain: nothing to bridge')
    const base = providerSetting(ctx, 'LIFI_API_URL', 'LI.FI bridge routes')
    const key = optionalSetting(ctx, 'LIFI_API_KEY')
    const options: Record<string, unknown> = {}
    if (input.slippageBps !== undefined) options.slippage = input.slippageBps / 10_000
    if (input.order) options.order = input.order
    const request = {
      fromChainId: input.fromChain,
      toChainId: input.toChain,
      fromTokenAddress: input.fromToken,
      toTokenAddress: input.toToken,
      fromAmount: input.fromAmount,
      ...(input.fromAddress ? { fromAddress: input.fromAddress } : {}),
      ...(input.toAddress ? { toAddress: input.toAddress } : {}),
      ...(Object.keys(options).length ? { options } : {}),
    }
    const r = await callProvider('LI.FI', joinUrl(base, '/v1/advanced/routes'), {
      method: 'POST',
      body: request,
      headers: key ? { 'x-lifi-api-key': key } : {},
      acceptStatus: [400, 404],
      timeoutMs: 18_000,
    })
    const json = r.json as
      | {
          routes?: LifiRoute[]
          unavailableRoutes?: { filteredOut?: unknown[]; failed?: unknown[] }
          message?: string
          code?: number
        }
      | undefined
    if (!json || typeof json !== 'object')
      throw new HandlerUpstreamError('upstream_failed', 'LI.FI answered something that is not JSON')
    if (r.status !== 200) {
      // LI.FI answers 400 { message, code } for a chain or token it does not support, or a bad amount
      throw new HandlerInputError(
        '(input)',
        `LI.FI refused the request: ${String(json.message ?? `HTTP ${r.status}`).slice(0, 300)}`,
        422,
      )
    }
    if (!Array.isArray(json.routes))
      throw new HandlerUpstreamError('upstream_failed', 'LI.FI answered without a routes list')
    const routes = json.routes.slice(0, input.maxRoutes ?? 5).map((rt) => {
      const steps = (rt.steps ?? []).map(step)
      const fees = steps.flatMap((s) => s.feeCosts)
      const tools = [
        ...new Set(
          steps
            .flatMap((s) => (s.includedSteps.length ? s.includedSteps.map((i) => i.tool) : [s.tool]))
            .filter((x): x is string => !!x),
        ),
      ]
      const durations = steps.map((s) => s.executionDurationSeconds)
      return {
        id: rt.id ?? null,
        tags: rt.tags ?? [],
        tools,
        fromAmount: rt.fromAmount ?? null,
        fromAmountUSD: usdNumber(rt.fromAmountUSD),
        toAmount: rt.toAmount ?? null,
        toAmountMin: rt.toAmountMin ?? null,
        toAmountUSD: usdNumber(rt.toAmountUSD),
        gasCostUSD: usdNumber(rt.gasCostUSD),
        feeCostUSD: sumUsd(fees),
        executionDurationSeconds:
          durations.length && durations.every((d) => d !== null) ? durations.reduce((a, d) => a + (d ?? 0), 0) : null,
        steps,
      }
    })
    const first = json.routes[0]
    return {
      body: {
        source: 'lifi',
        fromChain: input.fromChain,
        toChain: input.toChain,
        fromToken: token(first?.fromToken) ?? { address: input.fromToken },
        toToken: token(first?.toToken) ?? { address: input.toToken },
        fromAmount: input.fromAmount,
        routeCount: json.routes.length,
        routes,
        unavailable: {
          filteredOut: json.unavailableRoutes?.filteredOut?.length ?? 0,
          failed: json.unavailableRoutes?.failed?.length ?? 0,
        },
        ...(json.routes.length === 0 ? { note: 'LI.FI found no route for this transfer' } : {}),
      },
    }
  },
})

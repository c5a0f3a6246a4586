import { formatUnits, unitPrice } from '../_shared/market-amounts.js'
import { callProvider, joinUrl, providerSetting } from '../_shared/outbound.js'
import { defineHandler, HandlerInputError, HandlerUpstreamError } from '../../src/pool/handler-contract.js'

interface Input {
  chainId?: number
  sellToken: string
  buyToken: string
  sellAmount: string
  taker?: string
  slippageBps?: number
  sellDecimals?: number
  buyDecimals?: number
}

interface ZeroExFill {
  from?: string
  to?: string
  source?: string
  proportionBps?: string
}
interface ZeroExPrice {
  blockNumber?: string
  buyAmount?: string
  buyToken?: string
  sellAmount?: string
  sellToken?: string
  minBuyAmount?: string
  liquidityAvailable?: boolean
  gas?: string | null
  gasPrice?: string
  totalNetworkFee?: string | null
  fees?: Record<string, { amount?: string; token?: string; type?: string } | null>
  issues?: {
    allowance?: { actual?: string; spender?: string } | null
    balance?: { token?: string; actual?: string; expected?: string } | null
    simulationIncomplete?: boolean
    invalidSourcesPassed?: string[]
  }
  route?: { fills?: ZeroExFill[]; tokens?: Array<{ address?: string; symbol?: string }> }
  tokenMetadata?: Record<string, { buyTaxBps?: string | null; sellTaxBps?: string | null }>
  zid?: string
  name?: string
  message?: string
  data?: { details?: Array<{ field?: string; reason?: string }> }
}

const ADDRESS = '^0x[0-9a-fA-F]{40}$'
const INPUT_FIELDS = new Set(['chainId', 'sellToken', 'buyToken', 'sellAmount', 'taker', 'slippageBps'])

/**
 * An EVM swap price from the 0x Swap API v2, `GET /swap/permit2/price` (indicative price, no
 * transaction), with headers `0x-api-key` and `0x-version: v2`.
 * Response shape: https://0x.org/docs/api#tag/Swap/operation/swap::permit2::getPrice
 * (buyAmount, sellAmount, minBuyAmount, liquidityAvailable, gas, gasPrice, totalNetworkFee, fees
 * { integratorFee, zeroExFee, gasFee }, issues { allowance, balance, simulationIncomplete,
 * invalidSourcesPassed }, route { fills[] { from, to, source, proportionBps }, tokens[] }, tokenMetadata,
 * blockNumber, zid); with no liquidity only { liquidityAvailable: false, zid }. Errors are 400
 * { name: "INPUT_INVALID" | ..., message, data: { details: [{ field, reason }] } }.
 */
export default defineHandler<Input>({
  slug: 'dex-swap-quote',
  description:
    'Swap price on an EVM chain (Base by default) from the 0x aggregator: how much of a token you get for an amount of another, the minimum after slippage, the DEX route and sources, gas estimate and network fee, and allowance or balance issues of the taker.',
  providers: ['ZEROX_API_URL', 'ZEROX_API_KEY'],
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    required: ['sellToken', 'buyToken', 'sellAmount'],
    properties: {
      chainId: {
        type: 'integer',
        minimum: 1,
        maximum: 999999999,
        default: 8453,
        description:
          'EVM chain id (8453 Base, 1 Ethereum, 42161 Arbitrum, 10 Optimism, 137 Polygon, ...); default 8453.',
      },
      sellToken: {
        type: 'string',
        pattern: ADDRESS,
        description: 'Address of the token sold; 0xEeeeeEeeeEeEeeEeEeEeeEEEeeeeEeeeeeeeEEeE for the native coin (ETH).',
      },
      buyToken: { type: 'string', pattern: ADDRESS, description: 'Address of the token bought (same convention).' },
      sellAmount: {
        type: 'string',
        pattern: '^[1-9][0-9]{0,77}$',
        description: 'Amount sold in base units of sellToken, e.g. "1000000" for 1 USDC (6 decimals).',
      },
      taker: {
        type: 'string',
        pattern: ADDRESS,
        description: 'Optional wallet that would swap; 0x then reports its allowance and balance issues.',
      },
      slippageBps: {
        type: 'integer',
        minimum: 0,
        maximum: 10000,
        description: 'Slippage tolerance in basis points for minBuyAmount (0x default: 100 = 1%).',
      },
      sellDecimals: {
        type: 'integer',
        minimum: 0,
        maximum: 36,
        description: 'Decimals of sellToken, to add token-unit amounts and a price (0x answers in base units).',
      },
      buyDecimals: {
        type: 'integer',
        minimum: 0,
        maximum: 36,
        description: 'Decimals of buyToken (see sellDecimals).',
      },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      'source ("0x"), chainId, liquidityAvailable (false: no route; the other fields are then absent), sellToken, buyToken, sellAmount, buyAmount, minBuyAmount (base-unit strings), sources (DEX names), route { fills[] { from, to, source, percent }, tokens[] { address, symbol } }, gas, gasPrice, totalNetworkFee (wei), fees (as 0x gives them), issues { allowance { actual, spender } | null, balance { token, actual, expected } | null, simulationIncomplete, invalidSourcesPassed } (present when 0x reports them), tokenTaxes { buyToken, sellToken }, blockNumber, zid; with sellDecimals and buyDecimals also amounts { sell, buy, minBuy } in token units and price (buyToken per sellToken).',
    schema: {
      type: 'object',
      properties: {
        source: { type: 'string' },
        chainId: { type: 'integer' },
        liquidityAvailable: { type: 'boolean' },
        buyAmount: { type: 'string' },
        sellAmount: { type: 'string' },
        minBuyAmount: { type: 'string' },
        sources: { type: 'array', items: { type: 'string' } },
        route: { type: 'object' },
        gas: { type: ['string', 'null'] },
        issues: { type: ['object', 'null'] },
        price: { type: ['number', 'null'] },
      },
    },
    example: {
      source: '0x',
      chainId: 8453,
      sellToken: '0x833589fcd6edb6e08f4c7c32d4f71b54bda02913',
      buyToken: '0x4200000000000000000000000000000000000006',
      liquidityAvailable: true,
      sellAmount: '1000000000',
      buyAmount: '285714285714285714',
      minBuyAmount: '282857142857142857',
      sources: ['Aerodrome_V3', 'Uniswap_V3'],
      route: {
        fills: [
          {
            from: '0x833589fcd6edb6e08f4c7c32d4f71b54bda02913',
            to: '0x4200000000000000000000000000000000000006',
            source: 'Aerodrome_V3',
            percent: 60,
          },
          {
            from: '0x833589fcd6edb6e08f4c7c32d4f71b54bda02913',
            to: '0x4200000000000000000000000000000000000006',
            source: 'Uniswap_V3',
            percent: 40,
          },
        ],
        tokens: [
          { address: '0x833589fcd6edb6e08f4c7c32d4f71b54bda02913', symbol: 'USDC' },
          { address: '0x4200000000000000000000000000000000000006', symbol: 'WETH' },
        ],
      },
      gas: '288095',
      gasPrice: '7062490',
      totalNetworkFee: '2034668056550',
      fees: {
        integratorFee: null,
        zeroExFee: { amount: '150000', token: '0x833589fcd6edb6e08f4c7c32d4f71b54bda02913', type: 'volume' },
        gasFee: null,
      },
      issues: {
        allowance: { actual: '0', spender: '0x000000000022d473030f116ddee9f6b43ac78ba3' },
        balance: { token: '0x833589fcd6edb6e08f4c7c32d4f71b54bda02913', actual: '0', expected: '1000000000' },
        simulationIncomplete: false,
        invalidSourcesPassed: [],
      },
      tokenTaxes: { buyToken: { buyTaxBps: '0', sellTaxBps: '0' }, sellToken: { buyTaxBps: '0', sellTaxBps: '0' } },
      blockNumber: '21500000',
      zid: '0x111111111111111111111111',
      amounts: { sell: '1000', buy: '0.285714285714285714', minBuy: '0.282857142857142857' },
      price: 0.0002857142857142857,
    },
  },
  example: {
    chainId: 8453,
    sellToken: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913',
    buyToken: '0x4200000000000000000000000000000000000006',
    sellAmount: '1000000000',
    sellDecimals: 6,
    buyDecimals: 18,
  },
  async run(input, ctx) {
    if (input.sellToken.toLowerCase() === input.buyToken.toLowerCase())
      throw new HandlerInputError('buyToken', 'buyToken must differ from sellToken')
    const base = providerSetting(ctx, 'ZEROX_API_URL', '0x swap quotes')
    const key = providerSetting(ctx, 'ZEROX_API_KEY', '0x swap quotes')
    const chainId = input.chainId ?? 8453
    const url = joinUrl(base, '/swap/permit2/price', {
      chainId,
      sellToken: input.sellToken,
      buyToken: input.buyToken,
      sellAmount: input.sellAmount,
      taker: input.taker,
      slippageBps: input.slippageBps,
    })
    const r = await callProvider('0x', url, {
      headers: { '0x-api-key': key, '0x-version': 'v2' },
      acceptStatus: [400, 422],
    })
    const q = r.json as ZeroExPrice | undefined
    if (!q || typeof q !== 'object')
      throw new HandlerUpstreamError('upstream_failed', '0x answered something that is not JSON')
    if (r.status !== 200) {
      const detail = q.data?.details?.find((d) => d.field && INPUT_FIELDS.has(d.field))
      const reason = (detail?.reason ?? q.message ?? q.name ?? `HTTP ${r.status}`).toString().slice(0, 300)
      // 0x names the bad parameter (e.g. an unsupported chain or token): the buyer's to fix
      throw new HandlerInputError(detail?.field ?? '(input)', `0x refused the request: ${reason}`, 422)
    }
    const meta = { source: '0x', chainId, sellToken: input.sellToken, buyToken: input.buyToken }
    if (q.liquidityAvailable === false)
      return {
        body: {
          ...meta,
          liquidityAvailable: false,
          sellAmount: input.sellAmount,
          zid: q.zid ?? null,
          note: '0x found no liquidity for this pair and amount',
        },
      }
    if (typeof q.buyAmount !== 'string' || typeof q.sellAmount !== 'string')
      throw new HandlerUpstreamError('upstream_failed', '0x answered a price without amounts')
    const fills = (q.route?.fills ?? []).map((f) => ({
      from: f.from ?? null,
      to: f.to ?? null,
      source: f.source ?? null,
      percent:
        f.proportionBps !== undefined && Number.isFinite(Number(f.proportionBps))
          ? Number(f.proportionBps) / 100
          : null,
    }))
    const issues = q.issues
      ? {
          allowance: q.issues.allowance ?? null,
          balance: q.issues.balance ?? null,
          simulationIncomplete: q.issues.simulationIncomplete ?? null,
          invalidSourcesPassed: q.issues.invalidSourcesPassed ?? [],
        }
      : null
    const body: Record<string, unknown> = {
      ...meta,
      liquidityAvailable: true,
      sellToken: q.sellToken ?? input.sellToken,
      buyToken: q.buyToken ?? input.buyToken,
      sellAmount: q.sellAmount,
      buyAmount: q.buyAmount,
      minBuyAmount: q.minBuyAmount ?? null,
      sources: [...new Set(fills.map((f) => f.source).filter((s): s is string => !!s))],
      route: {
        fills,
        tokens: (q.route?.tokens ?? []).map((tk) => ({ address: tk.address ?? null, symbol: tk.symbol ?? null })),
      },
      gas: q.gas ?? null,
      gasPrice: q.gasPrice ?? null,
      totalNetworkFee: q.totalNetworkFee ?? null,
      fees: q.fees ?? null,
      issues,
      tokenTaxes: q.tokenMetadata ?? null,
      blockNumber: q.blockNumber ?? null,
      zid: q.zid ?? null,
    }
    if (input.sellDecimals !== undefined && input.buyDecimals !== undefined) {
      body.amounts = {
        sell: formatUnits(q.sellAmount, input.sellDecimals) ?? null,
        buy: formatUnits(q.buyAmount, input.buyDecimals) ?? null,
        minBuy: q.minBuyAmount ? (formatUnits(q.minBuyAmount, input.buyDecimals) ?? null) : null,
      }
      body.price = unitPrice(q.sellAmount, input.sellDecimals, q.buyAmount, input.buyDecimals)
    }
    return { body }
  },
})

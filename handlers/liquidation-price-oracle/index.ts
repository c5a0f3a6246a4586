import { defineHandler, HandlerInputError } from '../../src/pool/handler-contract.js'

interface Input {
  side: 'long' | 'short'
  entryPrice: number
  leverage: number
  maintenanceMarginRate: number
  feeRate: number
  quantity?: number
}

/**
 * Isolated-margin linear perpetual. Per unit of size, the position starts with margin E/L and is
 * liquidated when equity (margin + PnL − closing fee f·P) falls to the maintenance margin m·P:
 *   long:  E/L + (P − E) − f·P = m·P  ⇒  P = E·(1 − 1/L) / (1 − m − f)
 *   short: E/L + (E − P) − f·P = m·P  ⇒  P = E·(1 + 1/L) / (1 + m + f)
 */
const FORMULA = {
  long: 'P_liq = E × (1 − 1/L) / (1 − m − f)',
  short: 'P_liq = E × (1 + 1/L) / (1 + m + f)',
}

export default defineHandler<Input>({
  slug: 'liquidation-price-oracle',
  description:
    'Compute the liquidation price of an isolated-margin long or short perpetual position from entry price, leverage, maintenance margin rate and an optional closing fee rate, with the distance to entry and the formula used.',
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    required: ['side', 'entryPrice', 'leverage'],
    properties: {
      side: { type: 'string', enum: ['long', 'short'], description: 'Position direction.' },
      entryPrice: {
        type: 'number',
        exclusiveMinimum: 0,
        maximum: 1e12,
        description: 'Average entry price E (> 0, ≤ 1e12).',
      },
      leverage: {
        type: 'number',
        minimum: 1,
        maximum: 1_000,
        description: 'Leverage L (1-1000); initial margin is E/L per unit.',
      },
      maintenanceMarginRate: {
        type: 'number',
        minimum: 0,
        maximum: 0.5,
        default: 0.005,
        description: 'Maintenance margin rate m as a fraction of notional (0.005 = 0.5 %).',
      },
      feeRate: {
        type: 'number',
        minimum: 0,
        maximum: 0.1,
        default: 0,
        description: 'Closing (liquidation/taker) fee rate f as a fraction of notional, reserved from margin.',
      },
      quantity: {
        type: 'number',
        exclusiveMinimum: 0,
        maximum: 1e12,
        description: 'Optional position size in units, to also get notional and margin amounts.',
      },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      '{ side, liquidationPrice, distance, distancePercent, initialMarginRate, formula, position?: { notional, initialMargin, maintenanceMarginAtLiquidation } } — liquidationPrice 0 means a long that cannot be liquidated before the price reaches zero',
    schema: {
      type: 'object',
      properties: {
        side: { type: 'string' },
        liquidationPrice: { type: 'number' },
        distance: { type: 'number' },
        distancePercent: { type: 'number' },
        initialMarginRate: { type: 'number' },
        formula: { type: 'string' },
        position: {
          type: 'object',
          required: ['notional', 'initialMargin', 'maintenanceMarginAtLiquidation'],
          properties: {
            notional: { type: 'number' },
            initialMargin: { type: 'number' },
            maintenanceMarginAtLiquidation: { type: 'number' },
          },
        },
      },
      required: ['side', 'liquidationPrice', 'distance', 'distancePercent', 'initialMarginRate', 'formula'],
    },
    example: {
      side: 'long',
      liquidationPrice: 54271.3567839,
      distance: 5728.64321608,
      distancePercent: 9.5477,
      initialMarginRate: 0.1,
      formula: 'P_liq = E × (1 − 1/L) / (1 − m − f)',
    },
  },
  example: { side: 'long', entryPrice: 60_000, leverage: 10, maintenanceMarginRate: 0.005, feeRate: 0 },
  run(input) {
    const { side, entryPrice: E, leverage: L, maintenanceMarginRate: m, feeRate: f } = input
    // At or above 1/L the maintenance requirement already exceeds the margin posted: liquidated on opening.
    if (m + f >= 1 / L) {
      throw new HandlerInputError(
        'maintenanceMarginRate',
        `maintenance margin rate plus fee rate (${m + f}) must be below the initial margin rate 1/leverage (${1 / L}), or the position is liquidated at once`,
      )
    }
    const price = side === 'long' ? (E * (1 - 1 / L)) / (1 - m - f) : (E * (1 + 1 / L)) / (1 + m + f)
    const distance = side === 'long' ? E - price : price - E
    const body: Record<string, unknown> = {
      side,
      liquidationPrice: roundPrice(price),
      distance: roundPrice(distance),
      distancePercent: Math.round((distance / E) * 1e6) / 1e4,
      initialMarginRate: 1 / L,
      formula: FORMULA[side],
    }
    if (input.quantity !== undefined) {
      const q = input.quantity
      body.position = {
        notional: roundPrice(E * q),
        initialMargin: roundPrice((E * q) / L),
        maintenanceMarginAtLiquidation: roundPrice(m * price * q),
      }
    }
    return { body }
  },
})

/** 12 significant digits: prices stay exact to the cent far beyond any market price, without float noise. */
const roundPrice = (x: number) => Number(x.toPrecision(12))

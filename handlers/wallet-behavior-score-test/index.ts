import {
  BANDS,
  scoreOutputSchema,
  scoreWallet,
  WEIGHTS,
  type AccountFigures,
  type Classification,
} from '../_shared/wallet-score-model.js'
import { defineHandler, HandlerInputError } from '../../src/pool/handler-contract.js'

interface Input {
  preset?: Classification
  totalCollateralUsd?: number
  totalDebtUsd?: number
  availableBorrowsUsd?: number
  healthFactor?: number
  liquidationCount?: number
  daysSinceLastLiquidation?: number
  transactionCount?: number
}

/**
 * One documented hypothetical position per band, so an integrator can get a real answer in each
 * band without finding such a wallet on chain. Scores (model wallet-behavior-score/1):
 * low 3, moderate 37, high 60, critical 97.
 */
export const PRESETS: Record<Classification, AccountFigures> = {
  low: {
    totalCollateralUsd: 50_000,
    totalDebtUsd: 5_000,
    availableBorrowsUsd: 32_500,
    healthFactor: 8.25,
    liquidationCount: 0,
    daysSinceLastLiquidation: null,
    transactionCount: 250,
  },
  moderate: {
    totalCollateralUsd: 20_000,
    totalDebtUsd: 9_000,
    availableBorrowsUsd: 6_000,
    healthFactor: 1.8,
    liquidationCount: 0,
    daysSinceLastLiquidation: null,
    transactionCount: 40,
  },
  high: {
    totalCollateralUsd: 10_000,
    totalDebtUsd: 7_000,
    availableBorrowsUsd: 1_000,
    healthFactor: 1.25,
    liquidationCount: 1,
    daysSinceLastLiquidation: 200,
    transactionCount: 60,
  },
  critical: {
    totalCollateralUsd: 5_000,
    totalDebtUsd: 4_300,
    availableBorrowsUsd: 0,
    healthFactor: 1.02,
    liquidationCount: 3,
    daysSinceLastLiquidation: 7,
    transactionCount: 5,
  },
}

const usd = (what: string) => ({
  type: 'number',
  minimum: 0,
  maximum: 1e15,
  description: `${what} in USD (Aave's base currency); default 0, or the preset's.`,
})
const bandsText = BANDS.map((b) => `${b.min}–${b.max} ${b.classification}`)
  .reverse()
  .join(', ')

/**
 * Hosted service B's test endpoint. The spec gives it no purpose; we made it the sandbox of the
 * scoring model: it scores a hypothetical position described in the query string (or a preset
 * per risk band) with exactly the model wallet-behavior-score-query applies to on-chain data, and
 * reads no chain. Integrators use it to test their handling of every band and component.
 */
export default defineHandler<Input>({
  slug: 'wallet-behavior-score-test',
  description:
    'Score a hypothetical lending position (figures you supply, or a preset per risk band) with the same model as wallet-behavior-score-query, without reading any chain: for testing your handling of each risk band.',
  methods: ['GET'],
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      preset: {
        type: 'string',
        enum: ['low', 'moderate', 'high', 'critical'],
        description:
          "Start from the documented hypothetical position of this band; any figure you also send replaces the preset's.",
      },
      totalCollateralUsd: usd('Collateral supplied'),
      totalDebtUsd: usd('Debt owed'),
      availableBorrowsUsd: usd('What could still be borrowed (LTV headroom)'),
      healthFactor: {
        type: 'number',
        minimum: 0,
        maximum: 1e9,
        description: 'Aave health factor (liquidatable below 1); required when totalDebtUsd > 0.',
      },
      liquidationCount: {
        type: 'integer',
        minimum: 0,
        maximum: 100_000,
        description: 'Past liquidations of the wallet; default 0.',
      },
      daysSinceLastLiquidation: {
        type: 'number',
        minimum: 0,
        maximum: 36_500,
        description: 'Days since the last liquidation; required when liquidationCount > 0.',
      },
      transactionCount: {
        type: 'integer',
        minimum: 0,
        maximum: 1e9,
        description: 'Transactions the wallet has sent (its nonce); default 100 (an established wallet).',
      },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      `{ hypothetical: true, preset, inputs, score, classification, model, components[], profile }. score 0 (safest) … 100 (riskiest); classification bands: ${bandsText}. ` +
      `Component weights: ${Object.entries(WEIGHTS)
        .map(([k, w]) => `${k} ${w}`)
        .join(
          ', ',
        )}; a position liquidatable now (health factor < 1) scores at least 90. inputs echoes the figures scored.`,
    schema: {
      type: 'object',
      properties: {
        ...scoreOutputSchema.properties,
        hypothetical: { type: 'boolean', description: 'always true: no chain was read' },
        preset: { type: ['string', 'null'] },
        inputs: { type: 'object', description: 'the figures scored, after the preset and defaults' },
      },
    },
    example: {
      hypothetical: true,
      preset: null,
      inputs: {
        totalCollateralUsd: 20000,
        totalDebtUsd: 9000,
        availableBorrowsUsd: 6000,
        healthFactor: 1.8,
        liquidationCount: 0,
        daysSinceLastLiquidation: null,
        transactionCount: 40,
      },
      model: 'wallet-behavior-score/1',
      score: 37,
      classification: 'moderate',
      components: [
        {
          name: 'healthFactor',
          risk: 0.6,
          value: 1.8,
          explanation: 'health factor 1.8: risk rises linearly from 0 at 3 to full at 1',
          weight: 35,
          points: 21,
        },
        {
          name: 'borrowUtilisation',
          risk: 0.6,
          value: 0.6,
          explanation: '60 % of the borrowing power (debt + available borrows) is used',
          weight: 25,
          points: 15,
        },
        {
          name: 'liquidationCount',
          risk: 0,
          value: 0,
          explanation: 'never liquidated in the period looked at',
          weight: 20,
          points: 0,
        },
      ],
      profile: {
        position: 'borrower',
        leverage: 'moderate',
        liquidationHistory: 'none',
        activity: 'occasional',
        liquidatableNow: false,
        summary: 'An occasional wallet that borrows with moderate leverage, with no liquidations.',
      },
    },
  },
  example: {
    totalCollateralUsd: 20_000,
    totalDebtUsd: 9_000,
    availableBorrowsUsd: 6_000,
    healthFactor: 1.8,
    transactionCount: 40,
  },
  run(input) {
    const base: AccountFigures = input.preset
      ? PRESETS[input.preset]
      : {
          totalCollateralUsd: 0,
          totalDebtUsd: 0,
          availableBorrowsUsd: 0,
          healthFactor: null,
          liquidationCount: 0,
          daysSinceLastLiquidation: null,
          transactionCount: 100,
        }
    const figures: AccountFigures = {
      totalCollateralUsd: input.totalCollateralUsd ?? base.totalCollateralUsd,
      totalDebtUsd: input.totalDebtUsd ?? base.totalDebtUsd,
      availableBorrowsUsd: input.availableBorrowsUsd ?? base.availableBorrowsUsd,
      healthFactor: input.healthFactor ?? base.healthFactor,
      liquidationCount: input.liquidationCount ?? base.liquidationCount,
      daysSinceLastLiquidation: input.daysSinceLastLiquidation ?? base.daysSinceLastLiquidation,
      transactionCount: input.transactionCount ?? base.transactionCount,
    }
    if (figures.totalDebtUsd > 0 && figures.healthFactor === null)
      throw new HandlerInputError('healthFactor', 'healthFactor is required when totalDebtUsd > 0')
    if (figures.liquidationCount > 0 && figures.daysSinceLastLiquidation === null) {
      throw new HandlerInputError(
        'daysSinceLastLiquidation',
        'daysSinceLastLiquidation is required when liquidationCount > 0',
      )
    }
    if (figures.totalDebtUsd === 0) figures.healthFactor = null
    if (figures.liquidationCount === 0) figures.daysSinceLastLiquidation = null
    return { body: { hypothetical: true, preset: input.preset ?? null, inputs: figures, ...scoreWallet(figures) } }
  },
})

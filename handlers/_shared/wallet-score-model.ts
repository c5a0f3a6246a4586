/**
 * The wallet behaviour risk model shared by hosted service B (wallet-behavior-score-query scores
 * a wallet's real Aave v3 position, wallet-behavior-score-test scores figures the caller supplies).
 *
 * Deterministic and documented: five components, each a risk from 0 (safe) to 1 (risky) times a
 * fixed weight; the weights add up to 100, so the score is the rounded sum of the points.
 *
 * | component           | weight | risk 0 … 1                                                                   |
 * |---------------------|-------:|-------------------------------------------------------------------------------|
 * | healthFactor        |     35 | no debt 0; HF ≥ 3 → 0; HF ≤ 1 → 1; linear between: (3 − HF) / 2              |
 * | borrowUtilisation   |     25 | debt / (debt + available borrows): the share of the LTV borrowing power used  |
 * | liquidationCount    |     20 | min(liquidations / 3, 1)                                                      |
 * | liquidationRecency  |     15 | none 0; else max(0, 1 − days since the last one / 180)                        |
 * | activity            |      5 | max(0, 1 − log10(1 + transactions) / 2): new wallets are less known           |
 *
 * A position that can be liquidated now (debt and health factor < 1) scores at least 90.
 * Bands: 0–24 low, 25–49 moderate, 50–74 high, 75–100 critical.
 */
import type { JsonSchema } from '../../src/pool/handler-contract.js'

export const MODEL_VERSION = 'wallet-behavior-score/1'

export const WEIGHTS = {
  healthFactor: 35,
  borrowUtilisation: 25,
  liquidationCount: 20,
  liquidationRecency: 15,
  activity: 5,
} as const

export type Classification = 'low' | 'moderate' | 'high' | 'critical'

/** Lower bound of each band's score, highest first. */
export const BANDS: ReadonlyArray<{ classification: Classification; min: number; max: number }> = [
  { classification: 'critical', min: 75, max: 100 },
  { classification: 'high', min: 50, max: 74 },
  { classification: 'moderate', min: 25, max: 49 },
  { classification: 'low', min: 0, max: 24 },
]

/** Score floor of a position that is liquidatable right now. */
export const LIQUIDATABLE_FLOOR = 90

/** The figures the model reads, in USD (Aave's base currency) and plain counts. */
export interface AccountFigures {
  totalCollateralUsd: number
  totalDebtUsd: number
  availableBorrowsUsd: number
  /** null when there is no debt (Aave reports uint256 max then) */
  healthFactor: number | null
  liquidationCount: number
  /** null when there was no liquidation */
  daysSinceLastLiquidation: number | null
  transactionCount: number
}

export interface ScoreComponent {
  name: keyof typeof WEIGHTS
  weight: number
  /** 0 (safe) … 1 (risky), 4 decimals */
  risk: number
  /** weight × risk, 2 decimals */
  points: number
  value: number | null
  explanation: string
}

export interface BehaviouralProfile {
  position: 'none' | 'supplier' | 'borrower'
  leverage: 'none' | 'conservative' | 'moderate' | 'aggressive'
  liquidationHistory: 'none' | 'isolated' | 'repeated'
  activity: 'new' | 'occasional' | 'active'
  liquidatableNow: boolean
  summary: string
}

export interface WalletScore {
  model: typeof MODEL_VERSION
  score: number
  classification: Classification
  components: ScoreComponent[]
  profile: BehaviouralProfile
}

const clamp01 = (x: number) => (x < 0 ? 0 : x > 1 ? 1 : x)
const r4 = (x: number) => Math.round(x * 1e4) / 1e4
const r2 = (x: number) => Math.round(x * 100) / 100

export function classify(score: number): Classification {
  return BANDS.find((b) => score >= b.min)!.classification
}

/** Scores one set of account figures. Pure and deterministic. */
export function scoreWallet(f: AccountFigures): WalletScore {
  const hasDebt = f.totalDebtUsd > 0
  const hf = hasDebt ? f.healthFactor : null
  const utilisation = hasDebt ? f.totalDebtUsd / (f.totalDebtUsd + Math.max(0, f.availableBorrowsUsd)) : 0
  const parts: Array<Omit<ScoreComponent, 'weight' | 'points'>> = [
    {
      name: 'healthFactor',
      risk: hf === null ? 0 : clamp01((3 - hf) / 2),
      value: hf,
      explanation:
        hf === null
          ? 'no debt, so nothing can be liquidated'
          : hf < 1
            ? `health factor ${fmt(hf)} is below 1: the position can be liquidated now`
            : `health factor ${fmt(hf)}: risk rises linearly from 0 at 3 to full at 1`,
    },
    {
      name: 'borrowUtilisation',
      risk: clamp01(utilisation),
      value: r4(utilisation),
      explanation: hasDebt
        ? `${fmt(utilisation * 100)} % of the borrowing power (debt + available borrows) is used`
        : 'no borrowing',
    },
    {
      name: 'liquidationCount',
      risk: clamp01(f.liquidationCount / 3),
      value: f.liquidationCount,
      explanation:
        f.liquidationCount === 0
          ? 'never liquidated in the period looked at'
          : `${f.liquidationCount} liquidation(s); three or more count fully`,
    },
    {
      name: 'liquidationRecency',
      risk:
        f.daysSinceLastLiquidation === null || f.liquidationCount === 0
          ? 0
          : clamp01(1 - f.daysSinceLastLiquidation / 180),
      value: f.liquidationCount === 0 ? null : f.daysSinceLastLiquidation,
      explanation:
        f.daysSinceLastLiquidation === null || f.liquidationCount === 0
          ? 'no liquidation to date'
          : `last liquidated ${fmt(f.daysSinceLastLiquidation)} day(s) ago; the weight fades to 0 over 180 days`,
    },
    {
      name: 'activity',
      risk: clamp01(1 - Math.log10(1 + f.transactionCount) / 2),
      value: f.transactionCount,
      explanation: `${f.transactionCount} transaction(s) sent; 99 or more count as an established wallet`,
    },
  ]
  const components = parts.map((p) => ({
    ...p,
    risk: r4(p.risk),
    weight: WEIGHTS[p.name],
    points: r2(WEIGHTS[p.name] * p.risk),
  }))
  let score = Math.round(parts.reduce((sum, p) => sum + WEIGHTS[p.name] * clamp01(p.risk), 0))
  const liquidatableNow = hf !== null && hf < 1
  if (liquidatableNow) score = Math.max(score, LIQUIDATABLE_FLOOR)
  score = Math.min(100, Math.max(0, score))
  return {
    model: MODEL_VERSION,
    score,
    classification: classify(score),
    components,
    profile: profileOf(f, utilisation, liquidatableNow),
  }
}

function profileOf(f: AccountFigures, utilisation: number, liquidatableNow: boolean): BehaviouralProfile {
  const position = f.totalDebtUsd > 0 ? 'borrower' : f.totalCollateralUsd > 0 ? 'supplier' : 'none'
  const leverage =
    position !== 'borrower'
      ? 'none'
      : utilisation < 0.5
        ? 'conservative'
        : utilisation < 0.8
          ? 'moderate'
          : 'aggressive'
  const liquidationHistory = f.liquidationCount === 0 ? 'none' : f.liquidationCount === 1 ? 'isolated' : 'repeated'
  const activity = f.transactionCount < 10 ? 'new' : f.transactionCount < 100 ? 'occasional' : 'active'
  const what = {
    none: 'holds no lending position',
    supplier: 'supplies collateral without borrowing',
    borrower: `borrows with ${leverage} leverage`,
  }[position]
  const history = {
    none: 'no liquidations',
    isolated: 'one liquidation',
    repeated: `${f.liquidationCount} liquidations`,
  }[liquidationHistory]
  const summary = `${activity === 'new' ? 'A' : 'An'} ${activity} wallet that ${what}, with ${history}${liquidatableNow ? '; liquidatable now' : ''}.`
  return { position, leverage, liquidationHistory, activity, liquidatableNow, summary }
}

const fmt = (x: number) => String(Number(x.toPrecision(4)))

/** JSON Schema of the score part of both handlers' outputs (for their output description). */
export const scoreOutputSchema: JsonSchema & { properties: Record<string, JsonSchema> } = {
  type: 'object',
  properties: {
    model: { type: 'string', description: `model version, ${MODEL_VERSION}` },
    score: { type: 'integer', minimum: 0, maximum: 100, description: 'risk score: 0 safest, 100 riskiest' },
    classification: {
      type: 'string',
      enum: ['low', 'moderate', 'high', 'critical'],
      description: 'band of the score: 0–24 low, 25–49 moderate, 50–74 high, 75–100 critical',
    },
    components: {
      type: 'array',
      description:
        'one entry per model component: name, weight, risk 0–1, points = weight × risk, the value read and an explanation',
      items: {
        type: 'object',
        properties: {
          name: { type: 'string' },
          weight: { type: 'number' },
          risk: { type: 'number' },
          points: { type: 'number' },
          value: { type: ['number', 'null'] },
          explanation: { type: 'string' },
        },
      },
    },
    profile: {
      type: 'object',
      description:
        'behavioural profile: position (none|supplier|borrower), leverage (none|conservative|moderate|aggressive), liquidationHistory (none|isolated|repeated), activity (new|occasional|active), liquidatableNow, summary',
    },
  },
}

import t from 'tap'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import handler, { PRESETS } from './index.js'

/** GET input as the proxy hands it over: strings from the query string, coerced by the schema. */
const query = (q: Record<string, string>) => runInline(handler, q, { from: 'query' })

t.test('each preset lands in its own band with a known score', async (t) => {
  const expected = { low: 3, moderate: 37, high: 60, critical: 97 }
  for (const [band, score] of Object.entries(expected)) {
    const out = okBody(await query({ preset: band }))
    t.equal(out.classification, band, band)
    t.equal(out.score, score, `${band} scores ${score}`)
    t.equal(out.hypothetical, true)
    t.same(out.inputs, PRESETS[band as keyof typeof PRESETS])
    t.equal(
      out.components.reduce((s: number, c: any) => s + c.weight, 0),
      100,
      'weights add up to 100',
    )
  }
})

t.test('components by hand: the example (moderate)', async (t) => {
  const out = okBody(
    await query({
      totalCollateralUsd: '20000',
      totalDebtUsd: '9000',
      availableBorrowsUsd: '6000',
      healthFactor: '1.8',
      transactionCount: '40',
    }),
  )
  const c = Object.fromEntries(out.components.map((x: any) => [x.name, x]))
  t.equal(c.healthFactor.risk, 0.6, '(3 − 1.8) / 2')
  t.equal(c.healthFactor.points, 21)
  t.equal(c.borrowUtilisation.risk, 0.6, '9000 / (9000 + 6000)')
  t.equal(c.borrowUtilisation.points, 15)
  t.equal(c.liquidationCount.points, 0)
  t.equal(c.liquidationRecency.points, 0)
  t.equal(c.activity.risk, 0.1936, '1 − log10(41) / 2')
  t.equal(out.score, 37)
  t.equal(out.classification, 'moderate')
  t.match(out.profile, {
    position: 'borrower',
    leverage: 'moderate',
    liquidationHistory: 'none',
    activity: 'occasional',
    liquidatableNow: false,
  })
  t.match(c.healthFactor.explanation, /1\.8/)
})

t.test('band edges: 24 is low, 25 moderate, 74 high, 75 critical', async (t) => {
  // only utilisation and activity: 25 × u, activity 0 with 100+ transactions
  const at = async (debt: number, available: number, hf: number) =>
    okBody(
      await query({
        totalCollateralUsd: '1000',
        totalDebtUsd: String(debt),
        availableBorrowsUsd: String(available),
        healthFactor: String(hf),
      }),
    )
  t.match(await at(96, 4, 3), { score: 24, classification: 'low' })
  t.match(await at(100, 0, 3), { score: 25, classification: 'moderate' })
  // hf 1.4 → 35 × 0.8 = 28; u 1 → 25; + 1 liquidation 200 days ago → 6.67: 59.67 → 60
  const high = okBody(
    await query({ totalDebtUsd: '1', healthFactor: '1.4', liquidationCount: '1', daysSinceLastLiquidation: '200' }),
  )
  t.match(high, { score: 60, classification: 'high' })
  // hf 1 → 35, u 1 → 25, 1 liquidation today → 6.67 + 15 = 81.67
  t.match(
    okBody(await query({ totalDebtUsd: '1', healthFactor: '1', liquidationCount: '1', daysSinceLastLiquidation: '0' })),
    { score: 82, classification: 'critical' },
  )
  // 74: hf 1.4 (28) + u 1 (25) + 3 liquidations (20) + 166.5 days ago (15 × 0.075 = 1.125) → 74.1
  t.match(
    okBody(
      await query({ totalDebtUsd: '1', healthFactor: '1.4', liquidationCount: '3', daysSinceLastLiquidation: '166.5' }),
    ),
    { score: 74, classification: 'high' },
  )
  // 75: 159 days → 15 × 0.1167 = 1.75 → 74.75
  t.match(
    okBody(
      await query({ totalDebtUsd: '1', healthFactor: '1.4', liquidationCount: '3', daysSinceLastLiquidation: '159' }),
    ),
    { score: 75, classification: 'critical' },
  )
})

t.test('a liquidatable position (health factor < 1) scores at least 90', async (t) => {
  const out = okBody(
    await query({
      totalCollateralUsd: '1000',
      totalDebtUsd: '100',
      availableBorrowsUsd: '10000',
      healthFactor: '0.95',
    }),
  )
  t.equal(out.score, 90)
  t.equal(out.classification, 'critical')
  t.equal(out.profile.liquidatableNow, true)
  t.match(out.components[0].explanation, /below 1/)
})

t.test('no position: a supplier or an empty wallet', async (t) => {
  const supplier = okBody(await query({ totalCollateralUsd: '5000' }))
  t.match(supplier, { score: 0, classification: 'low', profile: { position: 'supplier', leverage: 'none' } })
  t.equal(supplier.inputs.healthFactor, null)
  const fresh = okBody(await query({ transactionCount: '0' }))
  t.match(
    fresh,
    { score: 5, profile: { position: 'none', activity: 'new' } },
    'only the activity component: a never-used wallet',
  )
  t.match(okBody(await query({})), { score: 0 }, 'defaults: empty position, established wallet')
})

t.test('a figure overrides the preset', async (t) => {
  const out = okBody(await query({ preset: 'critical', healthFactor: '3', liquidationCount: '0' }))
  t.equal(out.inputs.healthFactor, 3)
  t.equal(out.inputs.daysSinceLastLiquidation, null)
  t.ok(out.score < 97)
})

t.test('bad input: 400 naming the field', async (t) => {
  t.match(await query({ preset: 'extreme' }), { ok: false, status: 400, field: 'preset' })
  t.match(await query({ totalDebtUsd: 'lots' }), { ok: false, status: 400, field: 'totalDebtUsd' })
  t.match(await query({ totalDebtUsd: '-1' }), { ok: false, status: 400, field: 'totalDebtUsd' })
  t.match(await query({ liquidationCount: '1.5' }), { ok: false, status: 400, field: 'liquidationCount' })
  t.match(await query({ totalDebtUsd: '10' }), { ok: false, status: 400, field: 'healthFactor' })
  t.match(await query({ liquidationCount: '2' }), { ok: false, status: 400, field: 'daysSinceLastLiquidation' })
  t.match(await query({ wallet: '0x0' }), { ok: false, status: 400, field: 'wallet' })
})

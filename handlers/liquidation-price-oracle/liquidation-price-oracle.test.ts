import t from 'tap'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import handler from './index.js'

t.test('example: 10x long at 60,000 with 0.5 % maintenance', async (t) => {
  // 60000 × 0.9 / 0.995
  const out = okBody(await runInline(handler, { ...handler.example }))
  t.equal(out.liquidationPrice, 54271.3567839)
  t.equal(out.distancePercent, 9.5477)
  t.equal(out.formula, 'P_liq = E × (1 − 1/L) / (1 − m − f)')
})

t.test('textbook cases without maintenance margin: ±1/L', async (t) => {
  t.equal(
    okBody(await runInline(handler, { side: 'long', entryPrice: 100, leverage: 10, maintenanceMarginRate: 0 }))
      .liquidationPrice,
    90,
  )
  t.equal(
    okBody(await runInline(handler, { side: 'short', entryPrice: 100, leverage: 10, maintenanceMarginRate: 0 }))
      .liquidationPrice,
    110,
  )
  t.equal(
    okBody(await runInline(handler, { side: 'long', entryPrice: 100, leverage: 1, maintenanceMarginRate: 0 }))
      .liquidationPrice,
    0,
    '1x long is never liquidated',
  )
})

t.test('short with fees; fees bring liquidation closer', async (t) => {
  const noFee = okBody(
    await runInline(handler, { side: 'short', entryPrice: 2000, leverage: 20, maintenanceMarginRate: 0.01 }),
  )
  const fee = okBody(
    await runInline(handler, {
      side: 'short',
      entryPrice: 2000,
      leverage: 20,
      maintenanceMarginRate: 0.01,
      feeRate: 0.0005,
    }),
  )
  t.equal(noFee.liquidationPrice, Number(((2000 * 1.05) / 1.01).toPrecision(12)))
  t.equal(fee.liquidationPrice, Number(((2000 * 1.05) / 1.0105).toPrecision(12)))
  t.ok(fee.liquidationPrice < noFee.liquidationPrice)
})

t.test('consistency: at the liquidation price equity equals maintenance margin', async (t) => {
  for (const side of ['long', 'short'] as const) {
    const [E, L, m, f] = [123.45, 7, 0.02, 0.001]
    const P = okBody(
      await runInline(handler, { side, entryPrice: E, leverage: L, maintenanceMarginRate: m, feeRate: f }),
    ).liquidationPrice
    const pnl = side === 'long' ? P - E : E - P
    t.ok(Math.abs(E / L + pnl - f * P - m * P) < 1e-6, side)
  }
})

t.test('position amounts with quantity', async (t) => {
  const out = okBody(
    await runInline(handler, { side: 'long', entryPrice: 100, leverage: 4, maintenanceMarginRate: 0, quantity: 2 }),
  )
  t.same(out.position, { notional: 200, initialMargin: 50, maintenanceMarginAtLiquidation: 0 })
})

t.test('GET query strings are coerced', async (t) => {
  const out = okBody(
    await runInline(
      handler,
      { side: 'short', entryPrice: '100', leverage: '10', maintenanceMarginRate: '0' },
      { from: 'query' },
    ),
  )
  t.equal(out.liquidationPrice, 110)
})

t.test('invalid input names the field', async (t) => {
  t.match(await runInline(handler, { side: 'up', entryPrice: 1, leverage: 2 }), {
    ok: false,
    status: 400,
    field: 'side',
  })
  t.match(await runInline(handler, { side: 'long', entryPrice: 0, leverage: 2 }), {
    ok: false,
    status: 400,
    field: 'entryPrice',
  })
  t.match(await runInline(handler, { side: 'long', entryPrice: 1, leverage: 0.5 }), {
    ok: false,
    status: 400,
    field: 'leverage',
  })
  t.match(await runInline(handler, { side: 'long', entryPrice: 1, leverage: 1001 }), {
    ok: false,
    status: 400,
    field: 'leverage',
  })
  t.match(await runInline(handler, { side: 'long', entryPrice: 1, leverage: 100, maintenanceMarginRate: 0.01 }), {
    ok: false,
    status: 400,
    field: 'maintenanceMarginRate',
  })
  t.match(await runInline(handler, { side: 'long', entryPrice: 1e13, leverage: 2 }), {
    ok: false,
    status: 400,
    field: 'entryPrice',
  })
})

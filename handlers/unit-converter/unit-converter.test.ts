import t from 'tap'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import handler from './index.js'
import { LINEAR_UNITS, TEMPERATURE } from './unit-tables.js'

const result = async (value: unknown, from: string, to: string, extra: Record<string, unknown> = {}) =>
  okBody<{ result: number }>(await runInline(handler, { value, from, to, ...extra })).result

t.test('example', async (t) => {
  const o = await runInline(handler, handler.example)
  t.match(o, { ok: true, result: { body: { category: 'speed', result: 62.1371192237334 } } })
})

t.test('known answers in every category', async (t) => {
  t.equal(await result(1, 'in', 'cm'), 2.54)
  t.equal(await result(1, 'mi', 'km'), 1.609344)
  t.equal(await result(1, 'lb', 'g'), 453.59237)
  t.equal(await result(100, 'C', 'F'), 212)
  t.equal(await result(-40, 'F', 'C'), -40)
  t.equal(await result(0, 'K', 'C'), -273.15)
  t.equal(await result(491.67, 'R', 'C'), 0)
  t.equal(await result(1, 'gal', 'l'), 3.785411784)
  t.equal(await result(1, 'ac', 'm2'), 4046.8564224)
  t.equal(await result(1, 'kn', 'km/h'), 1.852)
  t.equal(await result(1, 'd', 'min'), 1440)
  t.equal(await result(1, 'GiB', 'MB'), 1073.741824)
  t.equal(await result(8, 'Mbit', 'MB'), 1)
  t.ok(Math.abs((await result(1, 'atm', 'psi')) - 14.695948775513449) < 1e-12, 'atm → psi')
  t.equal(await result(760, 'torr', 'atm'), 1)
  t.equal(await result(1, 'kWh', 'MJ'), 3.6)
  t.equal(await result(1, 'kcal', 'J'), 4184)
})

t.test('precision and all-units mode', async (t) => {
  t.equal(await result(1, 'in', 'cm', { precision: 2 }), 2.5)
  const o = await runInline(handler, { value: 1, from: 'm' })
  t.match(o, {
    ok: true,
    result: { body: { category: 'length', results: { cm: 100, mm: 1000, ft: 3.28083989501312 } } },
  })
  t.equal(
    Object.keys((o as { result: { body: { results: object } } }).result.body.results).length,
    Object.keys(LINEAR_UNITS.length.units).length,
  )
})

t.test('edge values: zero, negative, same unit', async (t) => {
  t.equal(await result(0, 'km', 'mi'), 0)
  t.equal(await result(-5, 'm', 'cm'), -500)
  t.equal(await result(42, 'kg', 'kg'), 42)
})

t.test('unit ids are unique across categories', async (t) => {
  const all = [...Object.values(LINEAR_UNITS).flatMap((c) => Object.keys(c.units)), ...Object.keys(TEMPERATURE)]
  t.equal(new Set(all).size, all.length)
})

t.test('GET query strings are coerced', async (t) => {
  const o = await runInline(handler, { value: '2.5', from: 'h', to: 'min', precision: '3' }, { from: 'query' })
  t.match(o, { ok: true, result: { body: { result: 150 } } })
})

t.test('invalid input names the field', async (t) => {
  t.match(await runInline(handler, { value: 1, from: 'furlong', to: 'm' }), { ok: false, status: 400, field: 'from' })
  t.match(await runInline(handler, { value: 1, from: 'm', to: 'kg' }), {
    ok: false,
    status: 400,
    field: 'to',
    message: /length .* mass/,
  })
  t.match(await runInline(handler, { value: 'ten', from: 'm', to: 'cm' }, { from: 'query' }), {
    ok: false,
    status: 400,
    field: 'value',
  })
  t.match(await runInline(handler, { value: -300, from: 'C', to: 'K' }), {
    ok: false,
    status: 400,
    field: 'value',
    message: /absolute zero/,
  })
  t.match(await runInline(handler, { from: 'm' }), { ok: false, status: 400, field: 'value' })
})

t.test('documented limit: |value| ≤ 1e300, results must stay finite', async (t) => {
  t.match(await runInline(handler, { value: 1e301, from: 'm', to: 'km' }), { ok: false, status: 400, field: 'value' })
  t.match(await runInline(handler, { value: 1e300, from: 'ly', to: 'nm' }), {
    ok: false,
    status: 400,
    field: 'value',
    message: /range/,
  })
})

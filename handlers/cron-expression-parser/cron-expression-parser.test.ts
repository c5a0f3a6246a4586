import t from 'tap'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import handler from './index.js'

type Out = { description: string; nextRuns: { local: string; utc: string }[] }

t.test('example: weekdays 9:00 New York across the DST switch (10 March 2024)', async (t) => {
  const out = okBody<Out>(await runInline(handler, { ...handler.example }))
  t.equal(out.description, 'At 09:00, Monday through Friday')
  t.same(out.nextRuns, [
    { local: '2024-03-08T09:00:00-05:00', utc: '2024-03-08T14:00:00.000Z' },
    { local: '2024-03-11T09:00:00-04:00', utc: '2024-03-11T13:00:00.000Z' },
    { local: '2024-03-12T09:00:00-04:00', utc: '2024-03-12T13:00:00.000Z' },
  ])
})

t.test('steps, seconds field, nicknames, 12-hour descriptions', async (t) => {
  const every15 = okBody<Out>(
    await runInline(handler, { expression: '*/15 * * * *', count: 3, from: '2024-01-01T00:07:00Z' }),
  )
  t.equal(every15.description, 'Every 15 minutes')
  t.same(
    every15.nextRuns.map((r) => r.utc),
    ['2024-01-01T00:15:00.000Z', '2024-01-01T00:30:00.000Z', '2024-01-01T00:45:00.000Z'],
  )
  const seconds = okBody<Out>(
    await runInline(handler, { expression: '30 0 12 1 * *', count: 1, from: '2024-01-15T00:00:00Z' }),
  )
  t.same(
    seconds.nextRuns.map((r) => r.utc),
    ['2024-02-01T12:00:30.000Z'],
  )
  const daily = okBody<Out>(
    await runInline(handler, { expression: '@daily', count: 1, from: '2024-01-01T10:00:00Z', timezone: 'Asia/Tokyo' }),
  )
  t.same(daily.nextRuns, [{ local: '2024-01-02T00:00:00+09:00', utc: '2024-01-01T15:00:00.000Z' }])
  t.equal(
    okBody<Out>(await runInline(handler, { expression: '0 14 * * *', use24HourTime: false, count: 1 })).description,
    'At 02:00 PM',
  )
})

t.test('day-of-month and day-of-week: OR by default, AND on request', async (t) => {
  const or = okBody<Out>(await runInline(handler, { expression: '0 0 13 * 5', count: 2, from: '2024-09-01T00:00:00Z' }))
  t.same(
    or.nextRuns.map((r) => r.utc.slice(0, 10)),
    ['2024-09-06', '2024-09-13'],
  )
  const and = okBody<Out>(
    await runInline(handler, { expression: '0 0 13 * 5', count: 2, from: '2024-09-01T00:00:00Z', domAndDow: true }),
  )
  t.same(
    and.nextRuns.map((r) => r.utc.slice(0, 10)),
    ['2024-09-13', '2024-12-13'],
    'Friday the 13th',
  )
})

t.test('a schedule that never fires has no runs', async (t) => {
  t.same(okBody<Out>(await runInline(handler, { expression: '0 0 30 2 *' })).nextRuns, [])
})

t.test('GET query strings are coerced', async (t) => {
  const out = okBody<Out>(
    await runInline(
      handler,
      { expression: '0 * * * *', count: '2', from: '2024-01-01T00:30:00Z', use24HourTime: 'true' },
      { from: 'query' },
    ),
  )
  t.equal(out.nextRuns.length, 2)
})

t.test('invalid input names the field', async (t) => {
  t.match(await runInline(handler, { expression: '61 * * * *' }), { ok: false, status: 400, field: 'expression' })
  t.match(await runInline(handler, { expression: 'every day' }), { ok: false, status: 400, field: 'expression' })
  t.match(await runInline(handler, { expression: '' }), { ok: false, status: 400, field: 'expression' })
  t.match(await runInline(handler, { expression: '* * * * *', timezone: 'Mars/Olympus' }), {
    ok: false,
    status: 400,
    field: 'timezone',
  })
  t.match(await runInline(handler, { expression: '* * * * *', from: 'yesterday' }), {
    ok: false,
    status: 400,
    field: 'from',
  })
  t.match(await runInline(handler, { expression: '* * * * *', count: 101 }), { ok: false, status: 400, field: 'count' })
  t.match(await runInline(handler, { expression: '* '.repeat(101) }), { ok: false, status: 400, field: 'expression' })
})

import t from 'tap'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import handler from './index.js'

type Out = { expression: string; description: string; crontabLine?: string; warnings: string[] }
const expr = async (input: Record<string, unknown>) => okBody<Out>(await runInline(handler, input)).expression

t.test('example: weekdays at 09:30 with a command', async (t) => {
  t.same(okBody<Out>(await runInline(handler, { ...handler.example })), {
    expression: '30 9 * * 1-5',
    description: 'At 09:30, Monday through Friday',
    warnings: [],
    crontabLine: '30 9 * * 1-5 /usr/local/bin/backup.sh',
  })
})

t.test('every schedule kind', async (t) => {
  t.equal(await expr({ schedule: 'every-n-minutes', interval: 15 }), '*/15 * * * *')
  t.equal(await expr({ schedule: 'every-n-minutes' }), '* * * * *')
  t.equal(await expr({ schedule: 'every-n-hours', interval: 6, at: '00:05' }), '5 */6 * * *')
  t.equal(await expr({ schedule: 'hourly', at: '00:45' }), '45 * * * *')
  t.equal(await expr({ schedule: 'daily', at: '23:05' }), '5 23 * * *')
  t.equal(await expr({ schedule: 'weekends', at: '8:00' }), '0 8 * * 0,6')
  t.equal(await expr({ schedule: 'weekly', daysOfWeek: ['fri', 'mon', 'tue', 'wed'] }), '0 0 * * 1-3,5')
  t.equal(await expr({ schedule: 'weekly', daysOfWeek: ['sun', 'sat'] }), '0 0 * * 0,6')
  t.equal(await expr({ schedule: 'monthly', dayOfMonth: 15, at: '12:00' }), '0 12 15 * *')
  t.equal(await expr({ schedule: 'yearly', dayOfMonth: 25, month: 12 }), '0 0 25 12 *')
  t.equal(okBody<Out>(await runInline(handler, { schedule: 'daily', at: '14:00' })).description, 'At 14:00')
})

t.test('warnings for uneven steps and short months', async (t) => {
  t.match(okBody<Out>(await runInline(handler, { schedule: 'every-n-minutes', interval: 7 })).warnings, [
    /does not divide 60/,
  ])
  t.match(okBody<Out>(await runInline(handler, { schedule: 'monthly', dayOfMonth: 31 })).warnings, [/skipped/])
  t.match(okBody<Out>(await runInline(handler, { schedule: 'yearly', dayOfMonth: 29, month: 2 })).warnings, [
    /leap years/,
  ])
})

t.test('GET query strings are coerced', async (t) => {
  const out = okBody<Out>(
    await runInline(handler, { schedule: 'weekly', daysOfWeek: 'wed', at: '07:15' }, { from: 'query' }),
  )
  t.equal(out.expression, '15 7 * * 3')
  t.equal(
    okBody<Out>(await runInline(handler, { schedule: 'every-n-minutes', interval: '5' }, { from: 'query' })).expression,
    '*/5 * * * *',
  )
})

t.test('invalid input names the field', async (t) => {
  t.match(await runInline(handler, {}), { ok: false, status: 400, field: 'schedule' })
  t.match(await runInline(handler, { schedule: 'daily', at: '24:00' }), { ok: false, status: 400, field: 'at' })
  t.match(await runInline(handler, { schedule: 'every-n-minutes', interval: 60 }), {
    ok: false,
    status: 400,
    field: 'interval',
  })
  t.match(await runInline(handler, { schedule: 'every-n-hours', interval: 24 }), {
    ok: false,
    status: 400,
    field: 'interval',
  })
  t.match(await runInline(handler, { schedule: 'weekly', daysOfWeek: ['funday'] }), {
    ok: false,
    status: 400,
    field: 'daysOfWeek.0',
  })
  t.match(await runInline(handler, { schedule: 'weekly', daysOfWeek: [] }), {
    ok: false,
    status: 400,
    field: 'daysOfWeek',
  })
  t.match(await runInline(handler, { schedule: 'yearly', dayOfMonth: 30, month: 2 }), {
    ok: false,
    status: 400,
    field: 'dayOfMonth',
  })
  t.match(await runInline(handler, { schedule: 'daily', command: 'a\nb' }), {
    ok: false,
    status: 400,
    field: 'command',
  })
  t.match(await runInline(handler, { schedule: 'daily', command: 'x'.repeat(1_001) }), {
    ok: false,
    status: 400,
    field: 'command',
  })
})

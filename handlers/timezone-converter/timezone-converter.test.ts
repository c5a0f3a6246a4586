import t from 'tap'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import handler from './index.js'

type Zoned = {
  zone: string
  iso: string
  date: string
  time: string
  offset: string
  offsetMinutes: number
  abbreviation: string
  isDST: boolean
  dayDifference: number
}
type Out = { utc: string; source: Zoned & { adjusted?: boolean; ambiguous?: boolean }; conversions: Zoned[] }

t.test('example: New York summer morning to London, Tokyo, Sydney', async (t) => {
  const out = okBody<Out>(await runInline(handler, { ...handler.example }))
  t.equal(out.utc, '2024-07-01T13:00:00Z')
  t.match(out.source, { offset: '-04:00', abbreviation: 'EDT', isDST: true })
  t.same(
    out.conversions.map((c) => [c.zone, c.iso, c.isDST]),
    [
      ['Europe/London', '2024-07-01T14:00:00+01:00', true],
      ['Asia/Tokyo', '2024-07-01T22:00:00+09:00', false],
      ['Australia/Sydney', '2024-07-01T23:00:00+10:00', false],
    ],
  )
})

t.test('winter offsets, date change, half-hour zones', async (t) => {
  const out = okBody<Out>(
    await runInline(handler, {
      datetime: '2024-01-15T20:00:00Z',
      to: ['America/Los_Angeles', 'Asia/Kolkata', 'Pacific/Kiritimati'],
    }),
  )
  t.same(
    out.conversions.map((c) => [c.iso, c.offsetMinutes, c.dayDifference]),
    [
      ['2024-01-15T12:00:00-08:00', -480, 0],
      ['2024-01-16T01:30:00+05:30', 330, 1],
      ['2024-01-16T10:00:00+14:00', 840, 1],
    ],
  )
  t.equal(out.conversions[0].abbreviation, 'PST')
})

t.test('explicit offset is an instant whatever "from" says', async (t) => {
  const out = okBody<Out>(
    await runInline(handler, { datetime: '2024-07-01T12:00:00+02:00', from: 'Asia/Tokyo', to: ['UTC'] }),
  )
  t.equal(out.utc, '2024-07-01T10:00:00Z')
  t.equal(out.source.iso, '2024-07-01T19:00:00+09:00')
})

t.test('DST overlap and gap', async (t) => {
  const earlier = okBody<Out>(
    await runInline(handler, { datetime: '2024-11-03T01:30', from: 'America/New_York', to: ['UTC'] }),
  )
  t.equal(earlier.utc, '2024-11-03T05:30:00Z')
  t.equal(earlier.source.ambiguous, true)
  const later = okBody<Out>(
    await runInline(handler, {
      datetime: '2024-11-03T01:30',
      from: 'America/New_York',
      to: ['UTC'],
      disambiguation: 'later',
    }),
  )
  t.equal(later.utc, '2024-11-03T06:30:00Z')
  const gap = okBody<Out>(
    await runInline(handler, { datetime: '2024-03-10T02:30', from: 'America/New_York', to: ['UTC'] }),
  )
  t.equal(gap.source.iso, '2024-03-10T03:30:00-04:00')
  t.equal(gap.source.adjusted, true)
  t.notOk(okBody<Out>(await runInline(handler, { ...handler.example })).source.adjusted)
})

t.test('no datetime means now', async (t) => {
  const out = okBody<Out>(await runInline(handler, { to: ['UTC'] }))
  t.ok(Math.abs(Date.parse(out.utc) - Date.now()) < 5_000)
})

t.test('GET query strings: a single zone becomes a list', async (t) => {
  const out = okBody<Out>(
    await runInline(handler, { datetime: '2024-01-01T00:00:00Z', to: 'Europe/Berlin' }, { from: 'query' }),
  )
  t.equal(out.conversions[0].iso, '2024-01-01T01:00:00+01:00')
})

t.test('invalid input names the field', async (t) => {
  t.match(await runInline(handler, { datetime: '2024-01-01T00:00:00Z' }), { ok: false, status: 400, field: 'to' })
  t.match(await runInline(handler, { to: ['Mars/Olympus'] }), { ok: false, status: 400, field: 'to.0' })
  t.match(await runInline(handler, { from: 'Nowhere', to: ['UTC'] }), { ok: false, status: 400, field: 'from' })
  t.match(await runInline(handler, { datetime: '2024-13-01T00:00', to: ['UTC'] }), {
    ok: false,
    status: 400,
    field: 'datetime',
  })
  t.match(await runInline(handler, { datetime: 'next tuesday', to: ['UTC'] }), {
    ok: false,
    status: 400,
    field: 'datetime',
  })
  t.match(await runInline(handler, { to: new Array(51).fill('UTC') }), { ok: false, status: 400, field: 'to' })
})

// Issue #22: London in summer was labelled "GMT+1" (the en-US name ICU gives), not the zone
// database's BST; zones whose tz database entry has only a numeric abbreviation keep GMT±h
t.test('abbreviations come from the tz database where it has a name for the time', async (t) => {
  const at = async (datetime: string, zones: string[]) =>
    okBody<Out>(await runInline(handler, { datetime, to: zones })).conversions.map((c) => c.abbreviation)
  t.same(
    await at('2024-07-01T12:00:00Z', [
      'Europe/London',
      'Europe/Paris',
      'Europe/Dublin',
      'Australia/Sydney',
      'Asia/Tokyo',
      'America/New_York',
      'Asia/Kolkata',
      'UTC',
    ]),
    ['BST', 'CEST', 'IST', 'AEST', 'JST', 'EDT', 'IST', 'UTC'],
  )
  t.same(await at('2024-01-15T12:00:00Z', ['Europe/London', 'Europe/Paris', 'Europe/Dublin', 'Australia/Sydney']), [
    'GMT',
    'CET',
    'GMT',
    'AEDT',
  ])
  // the tz database names no abbreviation for these (it writes +04, -03): the GMT form stays
  t.same(await at('2024-07-01T12:00:00Z', ['Asia/Dubai', 'America/Sao_Paulo']), ['GMT+4', 'GMT-3'])
  // historical: British Double Summer Time in 1944
  t.same(await at('1944-07-01T12:00:00Z', ['Europe/London']), ['BDST'])
})

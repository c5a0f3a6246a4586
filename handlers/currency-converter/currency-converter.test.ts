import t from 'tap'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import { standIn, type ReceivedRequest } from '../../test/helpers/provider-stand-in.js'
import { PROVIDER_SETTINGS } from '../../src/handler-providers.js'
import handler from './index.js'

// Frankfurter v1 shapes, https://frankfurter.dev (latest, historical, currencies)
const CURRENCIES = { EUR: 'Euro', GBP: 'British Pound', JPY: 'Japanese Yen', USD: 'United States Dollar' }
const RATES: Record<string, Record<string, Record<string, number>>> = {
  '2024-11-22': { USD: { EUR: 0.96, GBP: 0.7981, JPY: 154.77 } },
  '2024-01-05': { USD: { EUR: 0.91358, GBP: 0.78702, JPY: 144.66 } },
}

function frankfurter(req: ReceivedRequest) {
  if (req.path === '/currencies') return { json: CURRENCIES }
  const day = req.path === '/latest' ? '2024-11-22' : req.path === '/2024-01-06' ? '2024-01-05' : null
  if (!day) return { status: 404, json: { message: 'not found' } }
  const base = req.query.get('base') ?? 'EUR'
  const all = RATES[day]![base] ?? {}
  const symbols = req.query.get('symbols')?.split(',') ?? Object.keys(all)
  return {
    json: {
      amount: 1.0,
      base,
      date: day,
      rates: Object.fromEntries(symbols.filter((s) => s in all).map((s) => [s, all[s]])),
    },
  }
}

t.test('against a Frankfurter stand-in', async (t) => {
  const p = await standIn(t, frankfurter)
  const providers = { FRANKFURTER_URL: p.url }
  const run = (input: unknown, from: 'query' | 'body' = 'body') => runInline(handler, input, { providers, from })

  t.test('the example converts at the latest rate and states its date', async (t) => {
    const out = okBody(await run(handler.example))
    t.match(out, {
      amount: 100,
      from: 'USD',
      fromName: 'United States Dollar',
      date: '2024-11-22',
      requestedDate: null,
    })
    t.same(out.conversions, [{ to: 'EUR', name: 'Euro', rate: 0.96, converted: 96 }])
    const sent = p.received.at(-1)!
    t.equal(sent.path, '/latest')
    t.equal(sent.query.get('base'), 'USD')
    t.equal(sent.query.get('symbols'), 'EUR')
  })

  t.test('several targets, lower-case codes, query-string input', async (t) => {
    const out = okBody(await run({ amount: '2.5', from: 'usd', to: 'gbp, jpy' }, 'query'))
    t.same(
      out.conversions.map((c: any) => [c.to, c.rate, c.converted]),
      [
        ['GBP', 0.7981, 1.99525],
        ['JPY', 154.77, 386.925],
      ],
    )
    t.equal(p.received.at(-1)!.query.get('symbols'), 'GBP,JPY')
  })

  t.test('a historical date on a weekend uses the previous working day, and says so', async (t) => {
    const out = okBody(await run({ amount: 1000, from: 'USD', to: 'EUR', date: '2024-01-06' }))
    t.equal(out.requestedDate, '2024-01-06')
    t.equal(out.date, '2024-01-05')
    t.equal(out.conversions[0].converted, 913.58)
    t.equal(p.received.at(-1)!.path, '/2024-01-06')
  })

  t.test('the same currency on both sides is rate 1 and not asked of the provider', async (t) => {
    const out = okBody(await run({ amount: 7, from: 'USD', to: 'USD,EUR' }))
    t.same(
      out.conversions.map((c: any) => [c.to, c.rate, c.converted]),
      [
        ['USD', 1, 7],
        ['EUR', 0.96, 6.72],
      ],
    )
    t.equal(p.received.at(-1)!.query.get('symbols'), 'EUR')
  })

  t.test('unknown currencies are 400 naming the field', async (t) => {
    t.match(await run({ from: 'XYZ', to: 'EUR' }), { ok: false, status: 400, field: 'from', message: /XYZ/ })
    t.match(await run({ from: 'USD', to: 'EUR,ABC' }), { ok: false, status: 400, field: 'to', message: /ABC/ })
    t.match(await run({ from: 'US1', to: 'EUR' }), { ok: false, status: 400, field: 'from' })
  })

  t.test('bad input: 400 naming the field', async (t) => {
    t.match(await run({ to: 'EUR' }), { ok: false, status: 400, field: 'from' })
    t.match(await run({ from: 'USD', to: '' }), { ok: false, status: 400, field: 'to' })
    t.match(await run({ from: 'USD', to: ' , ' }), { ok: false, status: 400, field: 'to' })
    t.match(await run({ from: 'USD', to: 'A,B,C,D,E,F,G,H,I,J,K' }), { ok: false, status: 400, field: 'to' })
    t.match(await run({ from: 'USD', to: 'EUR,GBP,JPY,AUD,CAD,CHF,CNY,SEK,NOK,DKK,PLN' }), {
      ok: false,
      status: 400,
      field: 'to',
      message: /at most 10/,
    })
    t.match(await run({ from: 'USD', to: 'EUR', amount: 0 }), { ok: false, status: 400, field: 'amount' })
    t.match(await run({ from: 'USD', to: 'EUR', amount: -5 }), { ok: false, status: 400, field: 'amount' })
    t.match(await run({ from: 'USD', to: 'EUR', date: '2024-02-30' }), { ok: false, status: 400, field: 'date' })
    t.match(await run({ from: 'USD', to: 'EUR', date: '1998-12-31' }), { ok: false, status: 400, field: 'date' })
    t.match(await run({ from: 'USD', to: 'EUR', date: '2999-01-01' }), {
      ok: false,
      status: 400,
      field: 'date',
      message: /future/,
    })
    t.match(await run({ from: 'USD', to: 'EUR', extra: 1 }), { ok: false, status: 400, field: 'extra' })
  })

  t.test('a date the provider answers "not found" for is 422 on date', async (t) => {
    t.match(await run({ from: 'USD', to: 'EUR', date: '2001-01-01' }), { ok: false, status: 422, field: 'date' })
  })
})

t.test('provider problems', async (t) => {
  await t.rejects(runInline(handler, handler.example, { providers: {} }), {
    code: 'upstream_not_configured',
    message: /FRANKFURTER_URL/,
  })
  const down = await standIn(t, () => ({ status: 503, text: 'maintenance' }))
  await t.rejects(runInline(handler, handler.example, { providers: { FRANKFURTER_URL: down.url } }), {
    code: 'upstream_failed',
  })
  const garbage = await standIn(t, (req) =>
    req.path === '/currencies' ? { json: CURRENCIES } : { text: '<html>oops</html>' },
  )
  await t.rejects(runInline(handler, handler.example, { providers: { FRANKFURTER_URL: garbage.url } }), {
    code: 'upstream_failed',
    message: /not JSON/,
  })
  // a past day before a currency's series starts: Frankfurter answers the rates it has, without it
  const tooEarly = await standIn(t, (req) =>
    req.path === '/currencies'
      ? { json: CURRENCIES }
      : { json: { amount: 1, base: 'USD', date: '2000-01-03', rates: { GBP: 0.6187 } } },
  )
  t.match(
    await runInline(
      handler,
      { from: 'USD', to: 'GBP,JPY', date: '2000-01-03' },
      { providers: { FRANKFURTER_URL: tooEarly.url } },
    ),
    { ok: false, status: 422, field: 'to', message: /JPY/ },
  )
  const noRate = await standIn(t, (req) =>
    req.path === '/currencies'
      ? { json: CURRENCIES }
      : { json: { amount: 1, base: 'USD', date: '2024-11-22', rates: {} } },
  )
  await t.rejects(runInline(handler, handler.example, { providers: { FRANKFURTER_URL: noRate.url } }), {
    code: 'upstream_failed',
    message: /no rate/,
  })
})

// Issue #22: the default was api.frankfurter.app, Frankfurter's former host; its documentation now
// serves the same v1 API (latest, historical, currencies) under https://api.frankfurter.dev/v1
t.test("defaults to Frankfurter's documented v1 base URL, whose path is kept in every request", async (t) => {
  t.equal(PROVIDER_SETTINGS.find((s) => s.name === 'FRANKFURTER_URL')?.default, 'https://api.frankfurter.dev/v1')
  const p = await standIn(t, (req) =>
    req.path.startsWith('/v1/')
      ? frankfurter({ ...req, path: req.path.slice('/v1'.length) })
      : { status: 404, json: { message: 'not found' } },
  )
  const out = okBody(await runInline(handler, handler.example, { providers: { FRANKFURTER_URL: `${p.url}/v1` } }))
  t.same(out.conversions, [{ to: 'EUR', name: 'Euro', rate: 0.96, converted: 96 }])
  t.same(
    p.received.map((r) => r.path),
    ['/v1/currencies', '/v1/latest'],
  )
})

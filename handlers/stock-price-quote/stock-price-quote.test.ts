import t from 'tap'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import { standIn, type ReceivedRequest } from '../../test/helpers/provider-stand-in.js'
import handler from './index.js'

const KEY = 'av-test-key-123'
// Alpha Vantage shapes, https://www.alphavantage.co/documentation/ (Quote Endpoint, Search Endpoint)
function alphaVantage(req: ReceivedRequest) {
  if (req.path !== '/query') return { status: 404, text: 'not found' }
  if (req.query.get('apikey') !== KEY)
    return {
      json: {
        Information:
          'the parameter apikey is invalid or missing. Please claim your free API key on (https://www.alphavantage.co/support/#api-key).',
      },
    }
  const fn = req.query.get('function')
  if (fn === 'SYMBOL_SEARCH') {
    if (req.query.get('keywords') === 'zzzz') return { json: { bestMatches: [] } }
    return {
      json: {
        bestMatches: [
          {
            '1. symbol': 'TSCO.LON',
            '2. name': 'Tesco PLC',
            '3. type': 'Equity',
            '4. region': 'United Kingdom',
            '5. marketOpen': '08:00',
            '6. marketClose': '16:30',
            '7. timezone': 'UTC+01',
            '8. currency': 'GBX',
            '9. matchScore': '0.7273',
          },
          {
            '1. symbol': 'TSCDF',
            '2. name': 'Tesco plc',
            '3. type': 'Equity',
            '4. region': 'United States',
            '5. marketOpen': '09:30',
            '6. marketClose': '16:00',
            '7. timezone': 'UTC-04',
            '8. currency': 'USD',
            '9. matchScore': '0.7143',
          },
        ],
      },
    }
  }
  if (fn !== 'GLOBAL_QUOTE') return { json: { 'Error Message': 'This API function does not exist.' } }
  const symbol = req.query.get('symbol')
  if (symbol === 'IBM') {
    return {
      json: {
        'Global Quote': {
          '01. symbol': 'IBM',
          '02. open': '219.5000',
          '03. high': '222.8300',
          '04. low': '218.2000',
          '05. price': '222.9700',
          '06. volume': '3530040',
          '07. latest trading day': '2024-11-22',
          '08. previous close': '219.5000',
          '09. change': '3.4700',
          '10. change percent': '1.5809%',
        },
      },
    }
  }
  if (symbol === 'BUSY')
    return {
      json: {
        Note: 'Thank you for using Alpha Vantage! Our standard API call frequency is 5 calls per minute and 500 calls per day.',
      },
    }
  if (symbol === 'DAILY')
    return {
      json: { Information: 'Thank you for using Alpha Vantage! Our standard API rate limit is 25 requests per day.' },
    }
  if (symbol === 'BAD.X')
    return {
      json: {
        'Error Message':
          'Invalid API call. Please retry or visit the documentation (https://www.alphavantage.co/documentation/) for GLOBAL_QUOTE.',
      },
    }
  return { json: { 'Global Quote': {} } }
}

t.test('against an Alpha Vantage stand-in', async (t) => {
  const p = await standIn(t, alphaVantage)
  const providers = { ALPHAVANTAGE_URL: p.url, ALPHAVANTAGE_API_KEY: KEY }
  const run = (input: unknown, from: 'query' | 'body' = 'body') => runInline(handler, input, { providers, from })

  t.test('a quote maps every field to numbers', async (t) => {
    const out = okBody(await run(handler.example))
    t.same(out, {
      mode: 'quote',
      found: true,
      symbol: 'IBM',
      price: 222.97,
      open: 219.5,
      high: 222.83,
      low: 218.2,
      volume: 3530040,
      previousClose: 219.5,
      change: 3.47,
      changePercent: 1.5809,
      latestTradingDay: '2024-11-22',
      currency: null,
      source: 'Alpha Vantage (alphavantage.co)',
    })
    const sent = p.received.at(-1)!
    t.equal(sent.path, '/query')
    t.equal(sent.query.get('function'), 'GLOBAL_QUOTE')
    t.equal(sent.query.get('symbol'), 'IBM')
    t.equal(sent.query.get('apikey'), KEY)
  })

  t.test('lower-case symbols are upper-cased', async (t) => {
    t.equal(okBody(await run({ symbol: 'ibm' }, 'query')).price, 222.97)
  })

  t.test('an unknown symbol (empty Global Quote) and an invalid one (Error Message) are found:false', async (t) => {
    t.match(okBody(await run({ symbol: 'NOPE' })), { mode: 'quote', found: false, symbol: 'NOPE', reason: /no quote/ })
    t.match(okBody(await run({ symbol: 'bad.x' })), { found: false, symbol: 'BAD.X', reason: /rejected/ })
  })

  t.test('rate-limit notes in a 200 answer are 502, never a made-up quote', async (t) => {
    await t.rejects(run({ symbol: 'BUSY' }), { code: 'upstream_failed', message: /rate limit/ })
    await t.rejects(run({ symbol: 'DAILY' }), { code: 'upstream_failed', message: /rate limit/ })
  })

  t.test('symbol search', async (t) => {
    const out = okBody(await run({ search: ' tesco ' }))
    t.equal(out.mode, 'search')
    t.equal(out.query, 'tesco')
    t.same(out.matches[0], {
      symbol: 'TSCO.LON',
      name: 'Tesco PLC',
      type: 'Equity',
      region: 'United Kingdom',
      marketOpen: '08:00',
      marketClose: '16:30',
      timezone: 'UTC+01',
      currency: 'GBX',
      matchScore: 0.7273,
    })
    t.equal(out.matches[1].currency, 'USD')
    t.equal(p.received.at(-1)!.query.get('function'), 'SYMBOL_SEARCH')
    t.equal(p.received.at(-1)!.query.get('keywords'), 'tesco')
    t.same(okBody(await run({ search: 'zzzz' })).matches, [])
  })

  t.test('bad input: 400 naming the field', async (t) => {
    t.match(await run({}), { ok: false, status: 400, field: 'symbol' })
    t.match(await run({ symbol: 'IBM', search: 'ibm' }), { ok: false, status: 400, field: 'symbol' })
    t.match(await run({ symbol: '' }), { ok: false, status: 400, field: 'symbol' })
    t.match(await run({ symbol: 'IBM; DROP' }), { ok: false, status: 400, field: 'symbol' })
    t.match(await run({ symbol: 'A'.repeat(21) }), { ok: false, status: 400, field: 'symbol' })
    t.match(await run({ search: '   ' }), { ok: false, status: 400, field: 'search' })
    t.match(await run({ search: 'x'.repeat(101) }), { ok: false, status: 400, field: 'search' })
  })
})

t.test('provider problems', async (t) => {
  await t.rejects(runInline(handler, handler.example, { providers: {} }), {
    code: 'upstream_not_configured',
    message: /ALPHAVANTAGE_URL/,
  })
  const p = await standIn(t, alphaVantage)
  await t.rejects(runInline(handler, handler.example, { providers: { ALPHAVANTAGE_URL: p.url } }), {
    code: 'upstream_not_configured',
    message: /ALPHAVANTAGE_API_KEY/,
  })
  const wrongKey = await runInline(handler, handler.example, {
    providers: { ALPHAVANTAGE_URL: p.url, ALPHAVANTAGE_API_KEY: 'wrong-secret' },
  }).catch((e) => e)
  t.match(wrongKey, { code: 'upstream_failed', message: /API key/ })
  t.notMatch(wrongKey.message, /wrong-secret/)
  // Alpha Vantage also reports a bad key as a 200 "Error Message": never a symbol the buyer got wrong
  const keyError = await standIn(t, () => ({
    json: {
      'Error Message':
        'the parameter apikey is invalid or missing. Please claim your free API key on (https://www.alphavantage.co/support/#api-key).',
    },
  }))
  const keyProviders = { ALPHAVANTAGE_URL: keyError.url, ALPHAVANTAGE_API_KEY: KEY }
  await t.rejects(runInline(handler, handler.example, { providers: keyProviders }), {
    code: 'upstream_failed',
    message: /API key/,
  })
  await t.rejects(runInline(handler, { search: 'tesco' }, { providers: keyProviders }), {
    code: 'upstream_failed',
    message: /API key/,
  })
  const down = await standIn(t, () => ({ status: 500, text: 'oops' }))
  await t.rejects(
    runInline(handler, handler.example, { providers: { ALPHAVANTAGE_URL: down.url, ALPHAVANTAGE_API_KEY: KEY } }),
    { code: 'upstream_failed', message: /500/ },
  )
  const garbage = await standIn(t, () => ({ text: '<html>' }))
  await t.rejects(
    runInline(handler, handler.example, { providers: { ALPHAVANTAGE_URL: garbage.url, ALPHAVANTAGE_API_KEY: KEY } }),
    { code: 'upstream_failed' },
  )
  // a figure sent as a JSON number (or null) instead of the documented string is read, not a crash
  const numeric = await standIn(t, () => ({
    json: {
      'Global Quote': { '01. symbol': 'IBM', '05. price': 222.97, '06. volume': null, '10. change percent': '1.5809%' },
    },
  }))
  t.match(
    okBody(
      await runInline(handler, handler.example, {
        providers: { ALPHAVANTAGE_URL: numeric.url, ALPHAVANTAGE_API_KEY: KEY },
      }),
    ),
    { found: true, price: 222.97, volume: null, changePercent: 1.5809 },
  )
  const nullMatch = await standIn(t, () => ({
    json: { bestMatches: [null, { '1. symbol': 'TSCO.LON', '9. matchScore': '0.7273' }] },
  }))
  t.match(
    okBody(
      await runInline(
        handler,
        { search: 'tesco' },
        { providers: { ALPHAVANTAGE_URL: nullMatch.url, ALPHAVANTAGE_API_KEY: KEY } },
      ),
    ).matches,
    [{ symbol: 'TSCO.LON', name: null, matchScore: 0.7273 }],
  )
  const odd = await standIn(t, () => ({ json: { 'Global Quote': { '01. symbol': 'IBM', '05. price': '' } } }))
  await t.rejects(
    runInline(handler, handler.example, { providers: { ALPHAVANTAGE_URL: odd.url, ALPHAVANTAGE_API_KEY: KEY } }),
    { code: 'upstream_failed', message: /without a price/ },
  )
})

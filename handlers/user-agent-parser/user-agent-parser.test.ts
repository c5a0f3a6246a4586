import t from 'tap'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import handler from './index.js'

const parse = async (userAgent: unknown, from?: 'query') => okBody(await runInline(handler, { userAgent }, { from }))

t.test('example: Chrome on Windows desktop', async (t) => {
  const out = await parse(handler.example.userAgent)
  t.match(out, {
    browser: { name: 'Chrome', major: '124' },
    engine: { name: 'Blink' },
    os: { name: 'Windows', version: '10' },
    cpu: { architecture: 'amd64' },
    category: 'desktop',
    isBot: false,
    botPattern: null,
  })
})

t.test('iPhone Safari is mobile', async (t) => {
  const out = await parse(
    'Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1',
  )
  t.match(out, {
    browser: { name: 'Mobile Safari', version: '17.0' },
    os: { name: 'iOS', version: '17.0' },
    device: { type: 'mobile', vendor: 'Apple', model: 'iPhone' },
    category: 'mobile',
  })
})

t.test('Firefox on Linux, iPad', async (t) => {
  t.match(await parse('Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0'), {
    browser: { name: 'Firefox', version: '125.0' },
    engine: { name: 'Gecko' },
    os: { name: 'Linux' },
    category: 'desktop',
  })
  t.match(
    await parse(
      'Mozilla/5.0 (iPad; CPU OS 16_6 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/16.6 Mobile/15E148 Safari/604.1',
    ),
    { device: { type: 'tablet' }, category: 'tablet' },
  )
})

t.test('bots and HTTP clients', async (t) => {
  t.match(await parse('Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)'), {
    isBot: true,
    category: 'bot',
    botPattern: /google/i,
  })
  t.match(await parse('curl/8.4.0'), { isBot: true })
  t.match(await parse('python-requests/2.31.0'), { isBot: true })
})

t.test('empty or unknown strings give nulls, not errors', async (t) => {
  t.match(await parse(''), {
    browser: { name: null },
    os: { name: null },
    device: { type: null },
    category: 'other',
    isBot: false,
  })
  t.match(await parse('something-weird'), { browser: { name: null } })
})

t.test('GET query strings are used as is', async (t) => {
  t.match(await parse('Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0', 'query'), {
    browser: { name: 'Firefox' },
  })
})

t.test('invalid input names the field; documented 2,048-character limit', async (t) => {
  t.match(await runInline(handler, {}), { ok: false, status: 400, field: 'userAgent' })
  t.match(await runInline(handler, { userAgent: 42 }), { ok: false, status: 400, field: 'userAgent' })
  t.match(await runInline(handler, { userAgent: 'a'.repeat(2_049) }), { ok: false, status: 400, field: 'userAgent' })
  const start = Date.now()
  await parse('Mozilla/5.0 ' + '('.repeat(1_000) + ';'.repeat(1_000))
  t.ok(Date.now() - start < 2_000, 'pathological input at the limit returns quickly')
})

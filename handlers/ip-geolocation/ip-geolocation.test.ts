import t from 'tap'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import handler from './index.js'

const locate = async (input: Record<string, unknown>, from: 'query' | 'body' = 'body') =>
  okBody<Record<string, unknown>>(await runInline(handler, input, { from }))

t.test('known addresses from the bundled database', async (t) => {
  // MaxMind's own test range 81.2.69.160/27 is in London area in GeoLite2
  const uk = await locate({ ip: '81.2.69.160' })
  t.match(uk, { found: true, version: 4, country: 'GB', region: 'ENG', timezone: 'Europe/London', eu: false })
  t.type(uk.latitude, 'number')
  t.match(uk.attribution, /GeoLite2/)
  const google = await locate({ ip: '8.8.8.8' }, 'query')
  t.match(google, { found: true, country: 'US' })
  const v6 = await locate({ ip: '2001:4860:4860::8888' })
  t.match(v6, { found: true, version: 6, country: 'US' })
  const de = await locate({ ip: '85.214.132.117' })
  t.match(de, { found: true, country: 'DE', eu: true, timezone: 'Europe/Berlin' })
})

t.test('private and reserved addresses are not located', async (t) => {
  for (const ip of ['10.1.2.3', '192.168.1.1', '127.0.0.1', '172.20.0.5', '::1', 'fe80::1', 'fd00::5', '203.0.113.9']) {
    t.match(await locate({ ip }), { found: false, reason: 'private or reserved address' }, ip)
  }
})

t.test('invalid input names the field', async (t) => {
  t.match(await runInline(handler, { ip: '' }), { ok: false, status: 400, field: 'ip' })
  t.match(await runInline(handler, { ip: '999.1.1.1' }), { ok: false, status: 400, field: 'ip' })
  t.match(await runInline(handler, { ip: 'example.com' }), { ok: false, status: 400, field: 'ip' })
  t.match(await runInline(handler, { ip: '1'.repeat(46) }), { ok: false, status: 400, field: 'ip' })
  t.match(await runInline(handler, {}), { ok: false, status: 400, field: 'ip' })
})

import t from 'tap'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import handler from './index.js'

type Body = Record<string, string | boolean | null>
const check = async (input: Record<string, unknown>, from: 'query' | 'body' = 'body') =>
  okBody<Body>(await runInline(handler, input, { from }))

t.test('international UK landline', async (t) => {
  t.same(await check({ number: '+44 20 7946 0958' }), {
    parsed: true,
    valid: true,
    possible: true,
    type: 'FIXED_LINE',
    country: 'GB',
    callingCode: '44',
    e164: '+442079460958',
    national: '020 7946 0958',
    international: '+44 20 7946 0958',
    rfc3966: 'tel:+442079460958',
    reason: null,
  })
})

t.test('national numbers with a default country, from the query string', async (t) => {
  const us = await check({ number: '(213) 373-4253', country: 'US' }, 'query')
  t.match(us, { valid: true, country: 'US', e164: '+12133734253', international: '+1 213 373 4253' })
  const de = await check({ number: '0151 23456789', country: 'de' })
  t.match(de, { valid: true, type: 'MOBILE', country: 'DE', e164: '+4915123456789' })
})

t.test('invalid and unparsable numbers are answers, not errors', async (t) => {
  const short = await check({ number: '+1 212 55' })
  t.match(short, { valid: false })
  const bad = await check({ number: '+1 123 456 7890' })
  t.match(bad, { parsed: true, valid: false, possible: true, e164: '+11234567890' })
  const words = await check({ number: 'hello there' })
  t.match(words, { parsed: false, valid: false, reason: 'NOT_A_NUMBER' })
  const noCountry = await check({ number: '020 7946 0958' })
  t.match(noCountry, { parsed: false, valid: false, reason: 'INVALID_COUNTRY' })
})

t.test('invalid input names the field', async (t) => {
  t.match(await runInline(handler, { number: '' }), { ok: false, status: 400, field: 'number' })
  t.match(await runInline(handler, { number: '1'.repeat(65) }), { ok: false, status: 400, field: 'number' })
  t.match(await runInline(handler, { number: '123', country: 'USA' }), { ok: false, status: 400, field: 'country' })
  t.match(await runInline(handler, { number: '123', country: 'ZZ' }), { ok: false, status: 400, field: 'country' })
})

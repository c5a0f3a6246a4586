import t from 'tap'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import handler from './index.js'

const check = async (number: string, country?: string) =>
  okBody(await runInline(handler, country ? { number, country } : { number }, { from: 'query' }))

t.test('the example runs: a UK mobile', async (t) => {
  const out = okBody(await runInline(handler, handler.example))
  t.match(out, {
    parsed: true,
    valid: true,
    e164: '+447400123456',
    country: 'GB',
    callingCode: '44',
    lineType: 'MOBILE',
    sms: { capability: 'likely', canReceive: true },
    reason: null,
  })
  t.match(out.source, /libphonenumber-js/)
})

t.test('line types from the metadata decide the SMS verdict', async (t) => {
  const cases: Array<[string, string | undefined, string, string, boolean | null]> = [
    ['06 12 34 56 78', 'FR', 'MOBILE', 'likely', true],
    ['+49 1512 3456789', undefined, 'MOBILE', 'likely', true],
    ['(650) 253-0000', 'us', 'FIXED_LINE_OR_MOBILE', 'possible', null],
    ['+44 56 1234 5678', undefined, 'VOIP', 'possible', null],
    ['+44 70 1234 5678', undefined, 'PERSONAL_NUMBER', 'possible', null],
    ['+44 20 7946 0958', undefined, 'FIXED_LINE', 'unlikely', false],
    ['+1 800 555 1234', undefined, 'TOLL_FREE', 'unlikely', false],
    ['+44 76 2345 6789', undefined, 'PAGER', 'unlikely', false],
    ['+44 909 879 0000', undefined, 'PREMIUM_RATE', 'no', false],
    ['+44 300 123 4567', undefined, 'UAN', 'no', false],
  ]
  for (const [number, country, lineType, capability, canReceive] of cases) {
    const out = await check(number, country)
    t.equal(out.valid, true, number)
    t.equal(out.lineType, lineType, number)
    t.equal(out.sms.capability, capability, number)
    t.equal(out.sms.canReceive, canReceive, number)
    t.type(out.sms.reason, 'string')
  }
  const us = await check('(650) 253-0000', 'US')
  t.equal(us.e164, '+16502530000')
  t.equal(us.country, 'US')
})

t.test('invalid and unparsable numbers cannot receive SMS (an answer, not an error)', async (t) => {
  const short = await check('+44 7400 12345')
  t.match(short, { parsed: true, valid: false, lineType: null, sms: { capability: 'no', canReceive: false } })
  t.equal(short.reason, 'NOT_VALID_FOR_REGION', 'a possible length, but no GB mobile range is that short')
  t.equal(short.e164, '+44740012345')
  const long = await check('+44 74001 23456 78')
  t.match(long, { valid: false, reason: 'TOO_LONG', sms: { canReceive: false } })
  const noCountry = await check('+99 123')
  t.match(noCountry, { parsed: false, valid: false, reason: 'INVALID_COUNTRY', e164: null })
  const words = await check('call me maybe')
  t.match(words, { parsed: false, valid: false, reason: 'NOT_A_NUMBER' })
  const national = await check('07400 123456')
  t.match(national, { parsed: false, reason: 'INVALID_COUNTRY' }, 'a national number needs a country')
})

t.test('bad input names the field', async (t) => {
  t.match(await runInline(handler, {}), { ok: false, status: 400, field: 'number' })
  t.match(await runInline(handler, { number: '' }), { ok: false, status: 400, field: 'number' })
  t.match(await runInline(handler, { number: '1'.repeat(65) }), { ok: false, status: 400, field: 'number' })
  t.match(await runInline(handler, { number: '+447400123456', country: 'GBR' }), {
    ok: false,
    status: 400,
    field: 'country',
  })
  t.match(await runInline(handler, { number: '+447400123456', country: 'ZZ' }), {
    ok: false,
    status: 400,
    field: 'country',
  })
  t.match(await runInline(handler, { number: '+447400123456', carrier: 'x' }), {
    ok: false,
    status: 400,
    field: 'carrier',
  })
})

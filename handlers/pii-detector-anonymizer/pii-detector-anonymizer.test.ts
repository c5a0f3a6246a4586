import t from 'tap'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import handler, { ibanValid, luhnValid, type PiiSpan } from './index.js'

type Body = { spans: PiiSpan[]; counts: Record<string, number>; text?: string }
const run = async (input: Record<string, unknown>, from: 'query' | 'body' = 'body') =>
  okBody<Body>(await runInline(handler, input, { from }))

t.test('checksums', async (t) => {
  t.ok(luhnValid('4111111111111111'))
  t.notOk(luhnValid('4111111111111112'))
  t.ok(ibanValid('GB82WEST12345698765432'))
  t.ok(ibanValid('DE89370400440532013000'))
  t.notOk(ibanValid('GB82WEST12345698765433'))
  t.notOk(ibanValid('GB82WEST1234569876543'), 'wrong length')
})

t.test('detects each kind with spans', async (t) => {
  const text =
    'Mail jane.doe@example.com, call +1 212-555-0123, card 4111 1111 1111 1111, IBAN GB82 WEST 1234 5698 7654 32, host 192.168.10.4 or 2001:db8::8a2e:370:7334. Regards, John Smith'
  const r = await run({ text })
  const byType = (ty: string) => r.spans.filter((s) => s.type === ty)
  t.same(
    byType('email').map((s) => s.text),
    ['jane.doe@example.com'],
  )
  t.same(
    byType('phone').map((s) => s.details?.e164),
    ['+12125550123'],
  )
  t.same(
    byType('credit_card').map((s) => s.details),
    [{ brand: 'visa', last4: '1111' }],
  )
  t.same(
    byType('iban').map((s) => s.text),
    ['GB82 WEST 1234 5698 7654 32'],
  )
  t.same(
    byType('ip_address').map((s) => s.text),
    ['192.168.10.4', '2001:db8::8a2e:370:7334'],
  )
  t.same(
    byType('person_name').map((s) => s.text),
    ['John Smith'],
  )
  for (const s of r.spans) t.equal(text.slice(s.start, s.end), s.text)
  t.equal(r.text, undefined, 'detect mode returns spans only')
})

t.test('Luhn-valid card masked, Luhn-invalid number left alone', async (t) => {
  const r = await run({
    text: 'good 4111-1111-1111-1111 bad 4111-1111-1111-1112',
    mode: 'mask',
    types: ['credit_card'],
  })
  t.equal(r.text, 'good ****-****-****-1111 bad 4111-1111-1111-1112')
  t.equal(r.counts.credit_card, 1)
})

t.test('mask keeps email domain; redact replaces with labels', async (t) => {
  const m = await run({ text: 'write to bob@example.org', mode: 'mask', maskChar: '#' })
  t.equal(m.text, 'write to b##@example.org')
  const r = await run({ text: 'bob@example.org from 10.0.0.1 IBAN DE89370400440532013000', mode: 'redact' })
  t.equal(r.text, '[EMAIL] from [IP_ADDRESS] IBAN [IBAN]')
})

t.test('invalid IBAN checksum and bad IPs are not reported', async (t) => {
  const r = await run({ text: 'GB82WEST12345698765433 and 999.1.1.1 and 1.2.3', types: ['iban', 'ip_address'] })
  t.same(r.spans, [])
})

t.test('query-string input and default country for national phone numbers', async (t) => {
  const r = await run(
    { text: 'ring 020 7946 0958 today', types: 'phone', defaultCountry: 'GB', mode: 'redact' },
    'query',
  )
  t.equal(r.text, 'ring [PHONE] today')
})

t.test('empty text has no spans; invalid input names the field', async (t) => {
  t.same(await run({ text: '' }), { spans: [], counts: {} })
  t.match(await runInline(handler, { text: 'x'.repeat(100_001) }), { ok: false, status: 400, field: 'text' })
  t.match(await runInline(handler, { text: 'x', mode: 'shred' }), { ok: false, status: 400, field: 'mode' })
  t.match(await runInline(handler, { text: 'x', types: ['ssn'] }), { ok: false, status: 400, field: 'types.0' })
  t.match(await runInline(handler, { text: 'x', defaultCountry: 'usa' }), {
    ok: false,
    status: 400,
    field: 'defaultCountry',
  })
})

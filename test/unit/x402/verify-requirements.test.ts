import t from 'tap'
import { decodePaymentHeader, type DecodedPayment } from '../../../src/x402/decode-payment.js'
import {
  SETTLEMENT_EXPIRY_MARGIN_SECONDS,
  SETTLEMENT_PICKUP_SECONDS,
  jsonEqual,
  minValidForSeconds,
  verifyRequirements,
} from '../../../src/x402/verify-requirements.js'
import { sampleChallenge } from './fixtures.js'
import { FROM, NONCE, NOW, b64, v1Payload, v2Payload } from './payloads.js'

const ch = sampleChallenge() // price 10000, maxTimeoutSeconds 60
const OTHER = `0x${'77'.repeat(20)}`

function decode(header: { xPayment?: string; paymentSignature?: string }): DecodedPayment {
  const d = decodePaymentHeader(header, 16384)
  if (!d.ok) throw new Error(`fixture did not decode: ${d.reason} ${d.message}`)
  return d
}
const d1 = (auth: Record<string, unknown> = {}, o: Record<string, unknown> = {}) =>
  decode({ xPayment: b64(v1Payload(ch, auth, o)) })
const d2 = (auth: Record<string, unknown> = {}, o: Record<string, unknown> = {}) =>
  decode({ paymentSignature: b64(v2Payload(ch, auth, o)) })
const accepted = (o: Record<string, unknown>) => ({ accepted: { ...ch.requirementsV2, ...o } })

function reason(d: DecodedPayment, now = NOW, opts = {}): string {
  const r = verifyRequirements(d, ch, now, opts)
  return r.ok ? 'ok' : r.reason
}

t.test('a matching payment passes, normalized', async (t) => {
  for (const d of [d1(), d2()]) {
    const r = verifyRequirements(d, ch, NOW)
    t.ok(r.ok)
    if (r.ok) {
      t.equal(r.version, d.version)
      t.same(r.authorization, {
        from: FROM.toLowerCase(),
        to: ch.terms.payTo,
        value: 10000n,
        validAfter: BigInt(NOW - 600),
        validBefore: BigInt(NOW + 60),
        nonce: NONCE,
      })
      t.equal(r.signature, d.payload.payload.signature)
    }
  }
  t.equal(
    reason(
      d1({ to: ch.terms.payTo.toUpperCase().replace('0X', '0x'), nonce: NONCE.toUpperCase().replace('0X', '0x') }),
    ),
    'ok',
    'hex case does not matter',
  )
})

t.test('invalid_x402_version', async (t) => {
  const d = d1()
  const forged = { ...d, payload: { ...d.payload, x402Version: 2 } } as unknown as DecodedPayment
  t.equal(reason(forged), 'invalid_x402_version')
})

t.test('unsupported_scheme', async (t) => {
  t.equal(reason(d1({}, { scheme: 'upto' })), 'unsupported_scheme')
  t.equal(reason(d2({}, accepted({ scheme: 'upto' }))), 'unsupported_scheme')
})

t.test('invalid_network', async (t) => {
  t.equal(reason(d1({}, { network: 'base' })), 'invalid_network')
  t.equal(reason(d1({}, { network: 'eip155:84532' })), 'invalid_network', 'v1 uses network names')
  t.equal(reason(d2({}, accepted({ network: 'eip155:8453' }))), 'invalid_network')
  t.equal(reason(d2({}, accepted({ network: 'base-sepolia' }))), 'invalid_network', 'v2 uses CAIP-2')
})

t.test('asset_mismatch (v2)', async (t) => {
  t.equal(reason(d2({}, accepted({ asset: OTHER }))), 'asset_mismatch')
})

t.test('invalid_exact_evm_payload_recipient_mismatch', async (t) => {
  t.equal(reason(d1({ to: OTHER })), 'invalid_exact_evm_payload_recipient_mismatch')
  t.equal(reason(d2({ to: OTHER })), 'invalid_exact_evm_payload_recipient_mismatch')
  t.equal(reason(d2({}, accepted({ payTo: OTHER }))), 'invalid_exact_evm_payload_recipient_mismatch', 'accepted.payTo')
})

t.test('invalid_exact_evm_payload_authorization_value', async (t) => {
  t.equal(reason(d1({ value: '9999' })), 'invalid_exact_evm_payload_authorization_value', 'v1 below price')
  t.equal(reason(d1({ value: '10001' })), 'ok', 'v1: at least the price')
  t.equal(reason(d2({ value: '9999' })), 'invalid_exact_evm_payload_authorization_value', 'v2 below')
  t.equal(reason(d2({ value: '10001' })), 'invalid_exact_evm_payload_authorization_value', 'v2: exactly the price')
  t.equal(reason(d2({}, accepted({ amount: '1' }))), 'invalid_exact_evm_payload_authorization_value', 'accepted.amount')
})

t.test('accepted_requirements_mismatch (v2 deep equality with what we issued)', async (t) => {
  t.equal(reason(d2({}, accepted({ maxTimeoutSeconds: 3600 }))), 'accepted_requirements_mismatch')
  t.equal(reason(d2({}, accepted({ extra: { name: 'USD Coin', version: '2' } }))), 'accepted_requirements_mismatch')
  t.equal(reason(d2({}, accepted({ extra: undefined }))), 'accepted_requirements_mismatch')
  t.equal(reason(d2({}, accepted({ outputSchema: {} }))), 'accepted_requirements_mismatch', 'an extra member')
  t.equal(
    reason(d2({}, accepted({ payTo: ch.requirementsV2.payTo.toLowerCase() }))),
    'accepted_requirements_mismatch',
    'verbatim, as the official matcher',
  )
  const reordered = Object.fromEntries(Object.entries(ch.requirementsV2).reverse())
  t.equal(reason(d2({}, { accepted: reordered })), 'ok', 'member order does not matter')
})

t.test('invalid_exact_evm_payload_authorization_valid_after', async (t) => {
  t.equal(reason(d1({ validAfter: String(NOW + 1) })), 'invalid_exact_evm_payload_authorization_valid_after')
  t.equal(reason(d2({ validAfter: String(NOW) })), 'ok', 'validAfter == now is valid')
})

t.test('invalid_exact_evm_payload_authorization_valid_before', async (t) => {
  t.equal(reason(d1({ validBefore: String(NOW + 5) })), 'invalid_exact_evm_payload_authorization_valid_before')
  t.equal(reason(d2({ validBefore: String(NOW - 1) })), 'invalid_exact_evm_payload_authorization_valid_before')
  t.equal(reason(d1({ validBefore: String(NOW + 6) })), 'ok', 'exactly 6 s ahead is enough')
  // an endpoint whose calls run up to 10 s: the call, the batch pickup and the settler's margin
  const min = minValidForSeconds(10)
  t.equal(min, 10 + SETTLEMENT_PICKUP_SECONDS + SETTLEMENT_EXPIRY_MARGIN_SECONDS)
  t.equal(
    reason(d2({ validBefore: String(NOW + min - 1) }), NOW, { minValidForSeconds: min }),
    'invalid_exact_evm_payload_authorization_valid_before',
    'one second short',
  )
  t.equal(reason(d2({ validBefore: String(NOW + min) }), NOW, { minValidForSeconds: min }), 'ok')
  t.equal(minValidForSeconds(0), 30, 'never less than pickup and margin')
})

t.test('authorization_window_too_long', async (t) => {
  t.equal(reason(d1({ validBefore: String(NOW + 60 + 120) })), 'ok', 'maxTimeoutSeconds + 120 s slack')
  t.equal(reason(d1({ validBefore: String(NOW + 60 + 121) })), 'authorization_window_too_long')
  t.equal(reason(d2({ validBefore: ((1n << 256n) - 1n).toString() })), 'authorization_window_too_long')
  t.equal(
    reason(d2({ validBefore: String(NOW + 30) }), NOW, { maxValidForSeconds: 20 }),
    'authorization_window_too_long',
    'configurable',
  )
})

t.test('jsonEqual', async (t) => {
  t.ok(jsonEqual({ a: 1, b: [1, { c: 'x' }] }, { b: [1, { c: 'x' }], a: 1 }))
  t.ok(jsonEqual({ a: 1, u: undefined }, { a: 1 }))
  t.notOk(jsonEqual({ a: 1 }, { a: '1' }))
  t.notOk(jsonEqual([1, 2], { 0: 1, 1: 2 }))
  t.notOk(jsonEqual({ a: null }, { a: {} }))
  t.notOk(jsonEqual([1], [1, 2]))
})

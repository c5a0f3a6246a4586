/**
 * The aggregation rules the voucher store applies (coinbase/x402 `scheme_deferred_evm.md`,
 * "Verification" 3 and 4), on the spec's own examples: the aggregation payload (previous voucher in
 * `accepted.extra`, the new one in `payload`) and the deposit payload (a new voucher).
 */
import t from 'tap'
import aggregation from '../../../fixtures/deferred/spec-payment-payload-aggregation.json' with { type: 'json' }
import withDeposit from '../../../fixtures/deferred/spec-payment-payload-deposit.json' with { type: 'json' }
import { decodeDeferredPayload } from '../../../../src/schemes/deferred/decode-payload.js'
import { voucherJson } from '../../../../src/schemes/deferred/deferred-scheme.js'
import { checkAggregation } from '../../../../src/schemes/deferred/voucher-store.js'

const decode = (payload: unknown) => {
  const d = decodeDeferredPayload(payload)
  if (!d.ok) throw new Error(d.message)
  return d.payload
}

const spec = aggregation.paymentPayload
const amount = BigInt(spec.accepted.amount)
// the previous voucher as the requirement's extra carries it, read with the payload decoder
const previous = decode({ voucher: spec.accepted.extra.voucher, signature: spec.accepted.extra.signature }).voucher
const next = decode(spec.payload).voucher
const head = { nonce: previous.nonce, valueAggregate: previous.valueAggregate, timestamp: previous.timestamp }

t.test("the spec's aggregation example continues its previous voucher", async (t) => {
  t.equal(checkAggregation(head, next, amount), undefined)
})

t.test('each rule refuses with the reason that names it', async (t) => {
  const cases: Array<[string, Partial<typeof next>, string]> = [
    ['the same nonce again (replay)', { nonce: previous.nonce }, 'invalid_deferred_evm_payload_voucher_stale'],
    ['a skipped nonce', { nonce: previous.nonce + 2n }, 'invalid_deferred_evm_payload_voucher_stale'],
    [
      'an aggregate short of the price',
      { valueAggregate: previous.valueAggregate + amount - 1n },
      'invalid_deferred_evm_payload_voucher_value',
    ],
    [
      'an aggregate over the price',
      { valueAggregate: previous.valueAggregate + amount + 1n },
      'invalid_deferred_evm_payload_voucher_value',
    ],
    ['the same timestamp', { timestamp: previous.timestamp }, 'invalid_deferred_evm_payload_voucher_timestamp'],
  ]
  for (const [what, change, reason] of cases)
    t.equal(checkAggregation(head, { ...next, ...change }, amount)?.reason, reason, what)
})

t.test("the spec's deposit example starts a new voucher at exactly the price", async (t) => {
  const p = withDeposit.paymentPayload
  const fresh = decode(p.payload).voucher
  t.equal(checkAggregation(undefined, fresh, BigInt(p.accepted.amount)), undefined)
  t.equal(
    checkAggregation(undefined, { ...fresh, valueAggregate: 2n * BigInt(p.accepted.amount) }, BigInt(p.accepted.amount))
      ?.reason,
    'invalid_deferred_evm_payload_voucher_value',
  )
})

t.test("extra.voucher is written in the spec's form", async (t) => {
  const written = voucherJson(previous)
  const lower = (o: Record<string, unknown>) => JSON.parse(JSON.stringify(o).toLowerCase())
  t.same(
    lower(written),
    lower(spec.accepted.extra.voucher),
    'same fields, same number and string forms (addresses checksummed)',
  )
})

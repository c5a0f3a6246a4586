import { readFileSync } from 'node:fs'
import t from 'tap'
import { decodeDeferredPayload } from '../../../../src/schemes/deferred/decode-payload.js'

const fixture = (name: string) =>
  JSON.parse(readFileSync(new URL(`../../../fixtures/deferred/${name}`, import.meta.url), 'utf8'))
const aggregation = fixture('spec-payment-payload-aggregation.json').paymentPayload
const withDeposit = fixture('spec-payment-payload-deposit.json').paymentPayload
const voucherOnly = fixture('spec-payload-voucher.json').payload

function decoded(payload: unknown) {
  const d = decodeDeferredPayload(payload)
  if (!d.ok) throw new Error(`refused: ${d.message}`)
  return d.payload
}

t.test(
  "the spec's payloads decode: integers as bigint, addresses lower-case (two of the spec's are not valid EIP-55, so case is not checked)",
  async (t) => {
    const p = decoded(aggregation.payload)
    t.same(p.voucher, {
      id: '0x9f8d3e4a2c7b9d04dcd11c9f4c2b22b0a6f87671e7b8c3a2ea95b5dbdf4040bc',
      buyer: '0x209693bc6afc0c5328ba36faf03c514ef312287c',
      seller: '0xa1c7bf3d421e8a54d39fbbe13f9f826e5b2c8e3d',
      valueAggregate: 2_000_000n,
      asset: '0x081827b8c3aa05287b5aa2bc3051fbe638f33152',
      timestamp: 1_740_673_000n,
      nonce: 3n,
      escrow: '0x7cb1a5a2a2c9e91b76914c0a7b7fb3aeff3bca27',
      chainId: 84532n,
    })
    t.equal(p.signature, aggregation.payload.signature)
    t.equal(p.deposit, undefined)
    t.equal(
      decoded(voucherOnly).voucher.valueAggregate,
      2_000_000_000_000_000_000n,
      'an 18-decimal amount past 2^53, from a string',
    )
  },
)

t.test(
  "the spec's aggregation example follows its own rules: nonce + 1, value + amount, a later timestamp, the same parties",
  async (t) => {
    const next = decoded(aggregation.payload).voucher
    const prev = decoded({
      voucher: aggregation.accepted.extra.voucher,
      signature: aggregation.accepted.extra.signature,
    }).voucher
    t.equal(next.nonce, prev.nonce + 1n)
    t.equal(next.valueAggregate, prev.valueAggregate + BigInt(aggregation.accepted.amount))
    t.ok(next.timestamp > prev.timestamp)
    for (const k of ['id', 'buyer', 'seller', 'asset', 'escrow', 'chainId'] as const) t.equal(next[k], prev[k], k)
  },
)

t.test('a payload with a deposit: the authorization and the permit with its token domain', async (t) => {
  const p = decoded(withDeposit.payload)
  t.same(p.deposit, {
    authorization: {
      buyer: '0x209693bc6afc0c5328ba36faf03c514ef312287c',
      seller: '0xa1c7bf3d421e8a54d39fbbe13f9f826e5b2c8e3d',
      asset: '0x081827b8c3aa05287b5aa2bc3051fbe638f33152',
      amount: 5_000_000n,
      nonce: '0x1234567890abcdef1234567890abcdef1234567890abcdef1234567890abcdef',
      expiry: 1_740_759_400n,
      signature: withDeposit.payload.deposit.authorization.signature,
    },
    permit: {
      owner: '0x209693bc6afc0c5328ba36faf03c514ef312287c',
      spender: '0x7cb1a5a2a2c9e91b76914c0a7b7fb3aeff3bca27',
      value: 5_000_000n,
      nonce: 0n,
      deadline: 1_740_759_400n,
      domain: { name: 'USD Coin', version: '2' },
      signature: withDeposit.payload.deposit.permit.signature,
    },
  })
  const { permit: _permit, ...authorizationOnly } = withDeposit.payload.deposit
  t.equal(
    decoded({ ...withDeposit.payload, deposit: authorizationOnly }).deposit?.permit,
    undefined,
    'the permit is optional',
  )
})

/** the deposit example with one field replaced (undefined: removed), at a dotted path */
function mutate(path: string, value: unknown): unknown {
  const copy = structuredClone(withDeposit.payload)
  const keys = path.split('.')
  let o = copy
  for (const k of keys.slice(0, -1)) o = o[k]
  if (value === undefined) delete o[keys.at(-1)!]
  else o[keys.at(-1)!] = value
  return copy
}

const refusals: [string, unknown, string][] = [
  ['not an object', 'payload', 'payload must be an object'],
  ['an array', [], 'payload must be an object'],
  ['no voucher', mutate('voucher', undefined), 'voucher must be an object'],
  ['no signature', mutate('signature', undefined), 'signature must be'],
  ['an odd-length signature', mutate('signature', '0xabc'), 'signature must be'],
  ['a signature that is not hex', mutate('signature', 'hello'), 'signature must be'],
  ['an oversized signature', mutate('signature', `0x${'ab'.repeat(2049)}`), 'signature must be'],
  ['a short voucher id', mutate('voucher.id', '0x1234'), 'voucher.id must be a 0x-prefixed 32-byte'],
  ['a bad buyer', mutate('voucher.buyer', '0x209693Bc'), 'voucher.buyer must be a 0x-prefixed 20-byte'],
  ['a seller without 0x', mutate('voucher.seller', 'A1c7Bf3d421e8A54D39FbBE13f9f826E5B2C8e3D'), 'voucher.seller'],
  ['no asset', mutate('voucher.asset', undefined), 'voucher.asset'],
  ['no escrow', mutate('voucher.escrow', undefined), 'voucher.escrow'],
  ['a negative valueAggregate', mutate('voucher.valueAggregate', '-1'), 'voucher.valueAggregate must be a uint256'],
  ['a hex valueAggregate', mutate('voucher.valueAggregate', '0x10'), 'voucher.valueAggregate'],
  ['a fractional valueAggregate', mutate('voucher.valueAggregate', 1.5), 'voucher.valueAggregate'],
  ['an unsafe integer valueAggregate', mutate('voucher.valueAggregate', 2 ** 60), 'voucher.valueAggregate'],
  ['valueAggregate past uint256', mutate('voucher.valueAggregate', (2n ** 256n).toString()), 'voucher.valueAggregate'],
  ['a leading zero', mutate('voucher.valueAggregate', '01'), 'voucher.valueAggregate'],
  [
    'a timestamp past uint64',
    mutate('voucher.timestamp', (2n ** 64n).toString()),
    'voucher.timestamp must be a uint64',
  ],
  ['a nonce written as a float', mutate('voucher.nonce', '3.0'), 'voucher.nonce'],
  ['no chainId', mutate('voucher.chainId', undefined), 'voucher.chainId'],
  ['a deposit that is not an object', mutate('deposit', 'yes'), 'deposit must be an object'],
  [
    'a deposit without authorization',
    mutate('deposit.authorization', undefined),
    'deposit.authorization must be an object',
  ],
  [
    'an authorization amount as hex',
    mutate('deposit.authorization.amount', '0x4c4b40'),
    'deposit.authorization.amount',
  ],
  [
    'an authorization nonce as a number',
    mutate('deposit.authorization.nonce', 1),
    'deposit.authorization.nonce must be a 0x-prefixed 32-byte',
  ],
  [
    'an authorization expiry past uint64',
    mutate('deposit.authorization.expiry', (2n ** 64n).toString()),
    'deposit.authorization.expiry must be a uint64',
  ],
  [
    'an authorization without signature',
    mutate('deposit.authorization.signature', undefined),
    'deposit.authorization.signature',
  ],
  ['a permit that is not an object', mutate('deposit.permit', []), 'deposit.permit must be an object'],
  ['a permit without domain', mutate('deposit.permit.domain', undefined), 'deposit.permit.domain must be an object'],
  ['a permit domain without name', mutate('deposit.permit.domain.name', ''), 'deposit.permit.domain.name'],
  ['a permit without deadline', mutate('deposit.permit.deadline', undefined), 'deposit.permit.deadline'],
  ['a bad permit spender', mutate('deposit.permit.spender', '0x00'), 'deposit.permit.spender'],
  ['a permit signature that is not hex', mutate('deposit.permit.signature', '0xzz'), 'deposit.permit.signature'],
]

t.test('malformed payloads are refused invalid_payload, naming the field', async (t) => {
  for (const [name, payload, field] of refusals) {
    const d = decodeDeferredPayload(payload)
    if (d.ok) {
      t.fail(`${name}: accepted`)
      continue
    }
    t.equal(d.reason, 'invalid_payload', name)
    t.match(d.message, field, name)
  }
})

t.test("the older draft's depositAuthorization is refused with the current name", async (t) => {
  const { deposit, ...rest } = withDeposit.payload
  const d = decodeDeferredPayload({
    ...rest,
    depositAuthorization: { depositAuthorization: deposit.authorization, permit: deposit.permit },
  })
  t.equal(d.ok, false)
  if (!d.ok) t.match(d.message, 'payload.deposit')
})

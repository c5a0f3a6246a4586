import t from 'tap'
import { DEFAULT_MAX_PAYMENT_HEADER_BYTES, decodePaymentHeader } from '../../../src/x402/decode-payment.js'
import { isReasonCode, reasons } from '../../../src/x402/reasons.js'
import { sampleChallenge } from './fixtures.js'
import { NONCE, SIG, b64, v1Payload, v2Payload } from './payloads.js'
import { TEST_SEED, seededRandom } from './prng.js'

const MAX = DEFAULT_MAX_PAYMENT_HEADER_BYTES
const ch = sampleChallenge()
const FROM_UPPER = `0x${'AB'.repeat(20)}`

const v1 = (value: unknown) => decodePaymentHeader({ xPayment: b64(value) }, MAX)
const v2 = (value: unknown) => decodePaymentHeader({ paymentSignature: b64(value) }, MAX)

function refused(
  t: Pick<typeof import('tap').t, 'equal' | 'type'>,
  r: ReturnType<typeof decodePaymentHeader>,
  reason: string,
  status: number,
  what: string,
) {
  t.equal(r.ok, false, what)
  if (!r.ok) {
    t.equal(r.reason, reason, `${what}: reason`)
    t.equal(r.status, status, `${what}: status`)
    t.type(r.message, 'string')
  }
}

t.test('well-formed v1 and v2 headers decode', async (t) => {
  const a = v1(v1Payload(ch))
  t.ok(a.ok)
  if (a.ok && a.version === 1) {
    t.equal(a.payload.scheme, 'exact')
    t.equal(a.payload.network, 'base-sepolia')
    t.equal(a.payload.payload.signature, SIG)
    t.same(a.payload.payload.authorization, v1Payload(ch).payload.authorization)
  }
  const b = v2(v2Payload(ch))
  t.ok(b.ok)
  if (b.ok && b.version === 2) {
    t.same(b.accepted, ch.requirementsV2)
    t.same(b.payload.resource, ch.v2.resource)
    t.same(b.payload.extensions, ch.v2.extensions)
    t.equal(b.payload.payload.authorization.nonce, NONCE)
  }
  t.ok(
    decodePaymentHeader({ paymentSignature: b64(v2Payload(ch)).replace(/=+$/, '') }, MAX).ok,
    'unpadded base64 is tolerated',
  )
  t.ok(
    v1(v1Payload(ch, { value: ((1n << 256n) - 1n).toString(), from: FROM_UPPER })).ok,
    'uint256 max and upper-case hex',
  )
  t.ok(v2(v2Payload(ch, {}, { resource: undefined, extensions: undefined })).ok, 'resource and extensions are optional')
  t.ok(v2(v2Payload(ch, {}, { extensions: null })).ok, 'extensions: null is tolerated (zod OptionalAny)')
})
t.test('the v2 header wins when both are sent', async (t) => {
  const r = decodePaymentHeader({ xPayment: b64(v1Payload(ch)), paymentSignature: b64(v2Payload(ch)) }, MAX)
  t.ok(r.ok && r.version === 2)
})

t.test('MCP: the v2 PaymentPayload as a JSON value in _meta["x402/payment"]', async (t) => {
  const mcp = (value: unknown, max = MAX) => decodePaymentHeader({ mcpPayment: value }, max)
  const ok = mcp(JSON.parse(JSON.stringify(v2Payload(ch))))
  t.ok(
    ok.ok && ok.version === 2 && ok.payload.payload.authorization.nonce === NONCE,
    'decodes as the same header would',
  )
  const both = decodePaymentHeader({ mcpPayment: v2Payload(ch), xPayment: 'junk' }, MAX)
  t.ok(both.ok, 'the MCP payment is the one read when it is there')
  for (const [what, value] of [
    ['null', null],
    ['a string', b64(v2Payload(ch))],
    ['an array', [v2Payload(ch)]],
    ['a number', 7],
  ] as const) {
    refused(t, mcp(value), 'invalid_payload', 402, what)
  }
  refused(t, mcp(v1Payload(ch)), 'invalid_x402_version', 402, 'a v1 payload')
  refused(t, mcp({ ...v2Payload(ch), accepted: undefined }), 'invalid_payload', 402, 'accepted missing')
  refused(
    t,
    mcp(JSON.parse(`{"x402Version":2,"__proto__":{"x":1},"payload":{}}`)),
    'invalid_payload',
    402,
    '__proto__ key',
  )
  refused(t, mcp(v2Payload(ch), 100), 'payment_header_too_large', 402, 'past the budget')
  const r = mcp({ ...v2Payload(ch), accepted: undefined })
  t.match(!r.ok && r.message, /accepted/, 'the message names the field')
})

t.test('header-level rejections', async (t) => {
  refused(t, decodePaymentHeader({}, MAX), 'payment_required', 402, 'no header')
  refused(t, decodePaymentHeader({ xPayment: '' }, MAX), 'invalid_payload', 402, 'empty header')
  refused(
    t,
    decodePaymentHeader({ paymentSignature: 'A'.repeat(MAX + 4) }, MAX),
    'payment_header_too_large',
    402,
    'too large',
  )
  refused(
    t,
    decodePaymentHeader({ paymentSignature: b64(v2Payload(ch)) }, 100),
    'payment_header_too_large',
    402,
    'over a small cap',
  )
  refused(
    t,
    decodePaymentHeader({ xPayment: b64(v1Payload(ch)).replace(/\+/g, '-').replace(/\//g, '_') + '-_' }, MAX),
    'invalid_payload',
    402,
    'url-safe alphabet',
  )
  refused(t, decodePaymentHeader({ xPayment: `${b64(v1Payload(ch))} ` }, MAX), 'invalid_payload', 402, 'whitespace')
  refused(t, decodePaymentHeader({ xPayment: 'A' }, MAX), 'invalid_payload', 402, 'impossible base64 length')
  refused(t, decodePaymentHeader({ xPayment: 'AAA=A' }, MAX), 'invalid_payload', 402, 'padding inside')
  refused(t, decodePaymentHeader({ xPayment: b64('{"x402Version":1,') }, MAX), 'invalid_payload', 402, 'truncated JSON')
  refused(t, decodePaymentHeader({ xPayment: b64('not json') }, MAX), 'invalid_payload', 402, 'not JSON')
  for (const v of [[], 1, '"str"', 'null', 'true']) {
    refused(
      t,
      decodePaymentHeader({ xPayment: b64(typeof v === 'string' ? v : JSON.stringify(v)) }, MAX),
      'invalid_payload',
      402,
      `JSON ${String(v)}`,
    )
  }
})

t.test('prototype-pollution keys are refused anywhere', async (t) => {
  const json = JSON.stringify(v1Payload(ch))
  for (const [what, text] of [
    ['top-level __proto__', json.replace('{', '{"__proto__":{"polluted":1},')],
    ['escaped __proto__', json.replace('{', '{"\\u005f_proto__":{"polluted":1},')],
    ['nested constructor', json.replace('"payload":{', '"payload":{"constructor":{"prototype":{"x":1}},')],
    ['in extensions', JSON.stringify(v2Payload(ch)).replace('"extensions":{', '"extensions":{"__proto__":{"a":1},')],
  ] as const) {
    const header = what === 'in extensions' ? { paymentSignature: b64(text) } : { xPayment: b64(text) }
    refused(t, decodePaymentHeader(header, MAX), 'invalid_payload', 402, what)
  }
  t.equal(({} as Record<string, unknown>).polluted, undefined, 'Object.prototype untouched')
})

t.test('version rejections', async (t) => {
  refused(t, v1({ ...v1Payload(ch), x402Version: undefined }), 'invalid_x402_version', 402, 'missing')
  refused(t, v1({ ...v1Payload(ch), x402Version: 3 }), 'invalid_x402_version', 402, 'unknown')
  refused(t, v1({ ...v1Payload(ch), x402Version: '1' }), 'invalid_x402_version', 402, 'string')
  refused(t, v1(v2Payload(ch)), 'invalid_x402_version', 402, 'v2 payload in X-PAYMENT')
  refused(t, v2(v1Payload(ch)), 'invalid_x402_version', 402, 'v1 payload in PAYMENT-SIGNATURE')
})

t.test('payload shape rejections', async (t) => {
  refused(t, v1({ ...v1Payload(ch), payload: 'x' }), 'invalid_payload', 402, 'payload not an object')
  refused(t, v1({ ...v1Payload(ch), payload: undefined }), 'invalid_payload', 402, 'payload missing')
  refused(
    t,
    v2({ ...v2Payload(ch), payload: { signature: SIG, permit2Authorization: {} } }),
    'unsupported_payload_type',
    402,
    'Permit2 payload',
  )
  refused(t, v1({ ...v1Payload(ch), payload: { transaction: 'AAAA' } }), 'unsupported_payload_type', 402, 'SVM payload')
  refused(
    t,
    v1({ ...v1Payload(ch), payload: { ...v1Payload(ch).payload, extra: 1 } }),
    'invalid_payload',
    402,
    'unexpected payload field',
  )
  for (const signature of [undefined, 1, '', '0x', '1b'.repeat(65), `0x${'1b'.repeat(64)}1`, `0x${'zz'.repeat(65)}`]) {
    refused(
      t,
      v1({ ...v1Payload(ch), payload: { ...v1Payload(ch).payload, signature } }),
      'invalid_payload',
      402,
      `signature ${String(signature)}`,
    )
  }
  refused(t, v1({ ...v1Payload(ch), payload: { signature: SIG } }), 'invalid_payload', 402, 'authorization missing')
  refused(
    t,
    v1({ ...v1Payload(ch), payload: { signature: SIG, authorization: [] } }),
    'invalid_payload',
    402,
    'authorization array',
  )
})

t.test('authorization field rejections', async (t) => {
  const cases: [string, Record<string, unknown>][] = [
    ['from missing', { from: undefined }],
    ['from short', { from: `0x${'ab'.repeat(19)}` }],
    ['from long', { from: `0x${'ab'.repeat(21)}` }],
    ['from no 0x', { from: 'ab'.repeat(21) }],
    ['to non-hex', { to: `0x${'zz'.repeat(20)}` }],
    ['to number', { to: 1 }],
    ['value decimal point', { value: '1.0' }],
    ['value negative', { value: '-1' }],
    ['value leading zero', { value: '01' }],
    ['value empty', { value: '' }],
    ['value number', { value: 10000 }],
    ['value exponent', { value: '1e4' }],
    ['value hex', { value: '0x10' }],
    ['value over uint256', { value: (1n << 256n).toString() }],
    ['value 79 digits', { value: '1'.repeat(79) }],
    ['validAfter space', { validAfter: ' 1' }],
    ['validBefore null', { validBefore: null }],
    ['nonce 31 bytes', { nonce: `0x${'ab'.repeat(31)}` }],
    ['nonce 33 bytes', { nonce: `0x${'ab'.repeat(33)}` }],
    ['nonce number', { nonce: 5 }],
    ['extra field', { memo: 'hi' }],
  ]
  for (const [what, o] of cases) {
    refused(t, v1(v1Payload(ch, o)), 'invalid_payload', 402, what)
    refused(t, v2(v2Payload(ch, o)), 'invalid_payload', 402, `${what} (v2)`)
  }
})

t.test('v1 envelope rejections', async (t) => {
  refused(t, v1({ ...v1Payload(ch), scheme: undefined }), 'invalid_payload', 402, 'scheme missing')
  refused(t, v1({ ...v1Payload(ch), scheme: 1 }), 'invalid_payload', 402, 'scheme number')
  refused(t, v1({ ...v1Payload(ch), network: '' }), 'invalid_payload', 402, 'network empty')
  refused(t, v1({ ...v1Payload(ch), network: 'x'.repeat(5000) }), 'invalid_payload', 402, 'network huge')
})

t.test('v2 envelope rejections', async (t) => {
  const acc = (o: Record<string, unknown>) => v2({ ...v2Payload(ch), accepted: { ...ch.requirementsV2, ...o } })
  refused(t, v2({ ...v2Payload(ch), accepted: undefined }), 'invalid_payload', 402, 'accepted missing')
  refused(t, v2({ ...v2Payload(ch), accepted: [] }), 'invalid_payload', 402, 'accepted array')
  for (const k of ['scheme', 'network', 'amount', 'asset', 'payTo']) {
    refused(t, acc({ [k]: undefined }), 'invalid_payload', 402, `accepted.${k} missing`)
    refused(t, acc({ [k]: 7 }), 'invalid_payload', 402, `accepted.${k} number`)
  }
  for (const m of [0, -1, 1.5, '60', null])
    refused(t, acc({ maxTimeoutSeconds: m }), 'invalid_payload', 402, `maxTimeoutSeconds ${String(m)}`)
  refused(t, acc({ extra: 'USDC' }), 'invalid_payload', 402, 'extra string')
  refused(t, v2({ ...v2Payload(ch), resource: 'http://x' }), 'invalid_payload', 402, 'resource string')
  refused(t, v2({ ...v2Payload(ch), resource: {} }), 'invalid_payload', 402, 'resource.url missing')
  refused(
    t,
    v2({ ...v2Payload(ch), resource: { url: 'http://x', description: 1 } }),
    'invalid_payload',
    402,
    'resource.description number',
  )
  refused(t, v2({ ...v2Payload(ch), extensions: [] }), 'invalid_payload', 402, 'extensions array')
})

t.test(`seeded fuzz: 12,000 mutated headers never throw (seed ${TEST_SEED})`, async (t) => {
  const rng = seededRandom(TEST_SEED + 1)
  const junkValues: unknown[] = [
    null,
    true,
    0,
    -1,
    1.5,
    '',
    'x',
    '0x',
    [],
    {},
    [1, [2]],
    { a: {} },
    '9'.repeat(100),
    `0x${'f'.repeat(64)}`,
    '__proto__',
  ]
  const paths = (o: unknown, prefix: string[] = [], out: string[][] = []): string[][] => {
    if (o && typeof o === 'object') {
      for (const k of Object.keys(o)) {
        out.push([...prefix, k])
        paths((o as Record<string, unknown>)[k], [...prefix, k], out)
      }
    }
    return out
  }
  const mutateObject = (base: Record<string, unknown>): string => {
    const o = structuredClone(base)
    const all = paths(o)
    for (let n = 1 + rng.int(3); n > 0; n--) {
      const path = rng.pick(all)
      let parent: Record<string, unknown> = o
      for (const k of path.slice(0, -1)) {
        const next = parent[k]
        if (!next || typeof next !== 'object') break
        parent = next as Record<string, unknown>
      }
      const key = path[path.length - 1]
      switch (rng.int(5)) {
        case 0:
          delete parent[key]
          break
        case 1:
          parent[key] = rng.pick(junkValues)
          break
        case 2:
          parent[`k${rng.int(5)}`] = rng.pick(junkValues)
          break
        case 3:
          if (typeof parent[key] === 'string')
            parent[key] = (parent[key] as string).slice(0, rng.int((parent[key] as string).length + 1))
          break
        case 4:
          parent[key] = { nested: [[[[rng.pick(junkValues)]]]] }
          break
      }
    }
    return JSON.stringify(o)
  }
  const mutateText = (s: string): string => {
    const i = rng.int(s.length + 1)
    switch (rng.int(4)) {
      case 0:
        return s.slice(0, i)
      case 1:
        return s.slice(0, i) + String.fromCharCode(rng.int(256)) + s.slice(i)
      case 2:
        return s.slice(0, i) + s.slice(i + 1 + rng.int(8))
      default:
        return s.slice(0, i) + '['.repeat(rng.int(5000)) + s.slice(i)
    }
  }

  const bases = [v1Payload(ch), v2Payload(ch)] as Record<string, unknown>[]
  let threw = 0
  let badRefusal = 0
  let accepted = 0
  const reasonsSeen = new Set<string>()
  for (let i = 0; i < 12_000; i++) {
    const base = bases[i % 2]
    let header: string
    switch (rng.int(4)) {
      case 0:
        header = b64(mutateObject(base))
        break
      case 1:
        header = b64(mutateText(JSON.stringify(base)))
        break
      case 2:
        header = mutateText(b64(base))
        break
      default:
        header = Buffer.from(rng.bytes(rng.int(400))).toString(rng.int(2) === 0 ? 'base64' : 'latin1')
    }
    const headers =
      rng.int(3) === 0
        ? { xPayment: header, paymentSignature: rng.int(2) === 0 ? header : undefined }
        : i % 2 === 0
          ? { xPayment: header }
          : { paymentSignature: header }
    try {
      const r = decodePaymentHeader(headers, MAX)
      if (r.ok) accepted++
      else {
        reasonsSeen.add(r.reason)
        if (
          !isReasonCode(r.reason) ||
          r.status !== 402 ||
          typeof r.message !== 'string' ||
          reasons[r.reason].status !== r.status
        )
          badRefusal++
      }
    } catch {
      threw++
    }
  }
  t.equal(threw, 0, 'never throws')
  t.equal(badRefusal, 0, 'every refusal carries a catalogue reason, its status and a message')
  t.ok(
    reasonsSeen.has('invalid_payload') &&
      reasonsSeen.has('invalid_x402_version') &&
      reasonsSeen.has('payment_header_too_large'),
    `refusal classes reached: ${[...reasonsSeen].join(', ')}`,
  )
  t.ok(accepted > 0, `some mutations stay valid (${accepted})`)
})

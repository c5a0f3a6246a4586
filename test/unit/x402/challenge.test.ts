import t from 'tap'
import { PaymentRequiredV1Schema, PaymentRequiredV2Schema } from '@x402/core/schemas'
import { decodePaymentRequiredHeader, x402HTTPClient } from '@x402/core/http'
import { x402Client } from '@x402/core/client'
import { PaymentRequirementsSchema as LegacyRequirementsSchema, x402ResponseSchema } from 'x402/types'
import { buildChallenge, withError } from '../../../src/x402/challenge.js'
import { reasons, type ReasonCode } from '../../../src/x402/reasons.js'
import { BASE_SEPOLIA, PAY_TO_CHECKSUM, sampleChallenge, sampleInput } from './fixtures.js'

const USDC = BASE_SEPOLIA.usdc.address

const decodeHeader = (v: string): unknown => JSON.parse(Buffer.from(v, 'base64').toString('utf8'))

t.test('v1 body, field by field', async (t) => {
  const ch = sampleChallenge()
  const body = JSON.parse(ch.v1BodyJson)
  t.same(Object.keys(body), ['x402Version', 'error', 'accepts'])
  t.equal(body.x402Version, 1)
  t.equal(body.error, 'X-PAYMENT header is required', 'the official v1 middleware string')
  t.equal(body.accepts.length, 1)
  const r = body.accepts[0]
  t.equal(r.scheme, 'exact')
  t.equal(r.network, 'base-sepolia')
  t.equal(r.maxAmountRequired, '10000')
  t.equal(r.resource, 'http://127.0.0.1:4021/acme/weather/current')
  t.equal(r.description, 'Current weather for a city')
  t.equal(r.mimeType, 'application/json')
  t.equal(r.payTo, PAY_TO_CHECKSUM, 'checksummed, as the official middleware')
  t.equal(r.maxTimeoutSeconds, 60)
  t.equal(r.asset, USDC)
  t.same(r.extra, { name: 'USDC', version: '2' })
  t.same(r.outputSchema, {
    input: {
      type: 'http',
      method: 'GET',
      discoverable: true,
      queryParams: {
        city: { type: 'string', description: 'city name', required: true },
        units: { type: 'string', enum: ['metric', 'imperial'] },
      },
    },
    output: { type: 'object', properties: { tempC: { type: 'number' } } },
  })
  t.same(body, ch.v1Body, 'v1BodyJson is v1Body serialized')
  t.same(body.accepts[0], ch.requirementsV1)
})

t.test('v2 PAYMENT-REQUIRED header, field by field', async (t) => {
  const ch = sampleChallenge()
  t.match(ch.v2HeaderValue, /^[A-Za-z0-9+/]+={0,2}$/, 'standard base64')
  const v2 = decodeHeader(ch.v2HeaderValue) as Record<string, any>
  t.same(v2, ch.v2)
  t.equal(v2.x402Version, 2)
  t.equal(v2.error, 'PAYMENT-SIGNATURE header is required')
  t.same(v2.resource, {
    url: 'http://127.0.0.1:4021/acme/weather/current',
    description: 'Current weather for a city',
    mimeType: 'application/json',
  })
  t.same(v2.accepts, [
    {
      scheme: 'exact',
      network: 'eip155:84532',
      amount: '10000',
      asset: USDC,
      payTo: PAY_TO_CHECKSUM,
      maxTimeoutSeconds: 60,
      extra: { name: 'USDC', version: '2' },
    },
  ])
  t.same(v2.accepts[0], ch.requirementsV2)
  const bazaar = v2.extensions.bazaar
  t.same(bazaar.info, { input: { type: 'http', method: 'GET', queryParams: {} } })
  t.equal(bazaar.schema.properties.input.properties.queryParams.properties.city.type, 'string')
  t.same(bazaar.schema.properties.input.required, ['type', 'method'])
})

t.test('POST endpoints describe a JSON body', async (t) => {
  const ch = sampleChallenge({ method: 'post', outputDescription: { example: { tempC: 21 } } })
  t.same(ch.requirementsV1.outputSchema?.input, {
    type: 'http',
    method: 'POST',
    discoverable: true,
    bodyType: 'json',
    bodyFields: {
      city: { type: 'string', description: 'city name', required: true },
      units: { type: 'string', enum: ['metric', 'imperial'] },
    },
  })
  const bazaar = ch.v2.extensions?.bazaar as Record<string, any>
  t.same(bazaar.info, {
    input: { type: 'http', method: 'POST', bodyType: 'json', body: {} },
    output: { type: 'json', example: { tempC: 21 } },
  })
  t.same(bazaar.schema.properties.input.required, ['type', 'method', 'bodyType', 'body'])
})

t.test('optional fields are omitted, never null', async (t) => {
  const ch = sampleChallenge({
    inputSchema: undefined,
    outputDescription: undefined,
    description: '',
    mimeType: '',
    discoverable: false,
  })
  for (const json of [ch.v1BodyJson, Buffer.from(ch.v2HeaderValue, 'base64').toString()]) {
    t.notMatch(json, /null/)
  }
  t.same(ch.requirementsV1.outputSchema, { input: { type: 'http', method: 'GET', discoverable: false } })
  t.same(ch.v2.resource, { url: 'http://127.0.0.1:4021/acme/weather/current' })
  t.notOk('extensions' in ch.v2, 'no bazaar when not discoverable')
  t.equal(ch.requirementsV1.description, '', 'v1 requires description and mimeType strings')
  t.equal(ch.requirementsV1.mimeType, '')
})

t.test("the official clients' schemas accept the challenge", async (t) => {
  for (const ch of [
    sampleChallenge(),
    sampleChallenge({ method: 'PUT', inputSchema: undefined }),
    sampleChallenge({ description: '', mimeType: '' }),
  ]) {
    t.ok(PaymentRequiredV1Schema.safeParse(JSON.parse(ch.v1BodyJson)).success, '@x402/core PaymentRequiredV1Schema')
    t.ok(
      PaymentRequiredV2Schema.safeParse(decodeHeader(ch.v2HeaderValue)).success,
      '@x402/core PaymentRequiredV2Schema',
    )
    for (const r of JSON.parse(ch.v1BodyJson).accepts) {
      const parsed = LegacyRequirementsSchema.safeParse(r)
      t.ok(parsed.success, 'legacy x402 PaymentRequirementsSchema (what x402-fetch parses)')
    }
    t.same(decodePaymentRequiredHeader(ch.v2HeaderValue), ch.v2, '@x402/core decodePaymentRequiredHeader')
  }
})

t.test('@x402/core HTTP client reads v2 from the header and v1 from the body', async (t) => {
  const ch = sampleChallenge()
  const http = new x402HTTPClient(new x402Client())
  const fromHeader = http.getPaymentRequiredResponse(
    (name) => (name.toUpperCase() === 'PAYMENT-REQUIRED' ? ch.v2HeaderValue : null),
    JSON.parse(ch.v1BodyJson),
  )
  t.same(fromHeader, ch.v2)
  const fromBody = http.getPaymentRequiredResponse(() => null, JSON.parse(ch.v1BodyJson))
  t.same(fromBody, ch.v1Body)
})

t.test('withError carries the reason in both generations', async (t) => {
  const ch = sampleChallenge()
  for (const reason of Object.keys(reasons) as ReasonCode[]) {
    const e = withError(ch, reason)
    const body = JSON.parse(e.v1BodyJson)
    t.equal(body.error, reason)
    t.equal(body.message, reasons[reason].message)
    t.same(body.accepts, ch.v1Body.accepts)
    const v2 = decodePaymentRequiredHeader(e.v2HeaderValue)
    t.same(v2, { ...ch.v2, error: reason }, `${reason}: header decodes to the challenge with the reason`)
    t.ok(PaymentRequiredV2Schema.safeParse(v2).success)
    t.equal(withError(ch, reason), e, 'memoized')
  }
  const custom = withError(ch, 'invalid_payload', 'authorization.nonce must be 32 bytes of 0x hex')
  t.equal(JSON.parse(custom.v1BodyJson).message, 'authorization.nonce must be 32 bytes of 0x hex')
  // the legacy client's response schema only knows the official codes
  t.ok(
    x402ResponseSchema.safeParse(JSON.parse(withError(ch, 'invalid_exact_evm_payload_signature').v1BodyJson)).success,
  )
})

t.test('non-ASCII descriptions survive the padded base64 splice', async (t) => {
  for (const description of ['Météo ☀', '天気', 'a', 'ab', 'abc', '"quoted" \\ slash']) {
    const ch = sampleChallenge({ description })
    const e = withError(ch, 'payer_blocked')
    t.equal((decodePaymentRequiredHeader(e.v2HeaderValue).resource as { description: string }).description, description)
    t.equal(JSON.parse(e.v1BodyJson).accepts[0].description, description)
  }
})

t.test('terms are normalized for verification', async (t) => {
  const ch = sampleChallenge({ amount: '123456' })
  t.same(ch.terms, {
    amount: 123456n,
    payTo: PAY_TO_CHECKSUM.toLowerCase(),
    asset: USDC.toLowerCase(),
    networkV1: 'base-sepolia',
    networkV2: 'eip155:84532',
    chainId: 84532,
    token: { name: 'USDC', version: '2' },
    maxTimeoutSeconds: 60,
  })
  t.ok(ch.paymentHeaderBudget > ch.v2HeaderValue.length, 'budget covers the echoed requirements and extensions')
})

t.test('bad configuration throws at build time', async (t) => {
  t.throws(() => buildChallenge(sampleInput({ resourceUrl: '/relative' })))
  t.throws(() => buildChallenge(sampleInput({ amount: '1.5' })))
  t.throws(() => buildChallenge(sampleInput({ amount: '-1' })))
  t.throws(() => buildChallenge(sampleInput({ amount: -1n })))
  t.throws(() => buildChallenge(sampleInput({ amount: '01' })))
  t.throws(() => buildChallenge(sampleInput({ payTo: '0x1234' })))
  t.throws(() => buildChallenge(sampleInput({ maxTimeoutSeconds: 0 })))
  t.throws(() => buildChallenge(sampleInput({ method: 'TRACE' })))
  t.throws(() => buildChallenge(sampleInput({ chain: { ...BASE_SEPOLIA, caip2: 'eip155:8453' } })))
})

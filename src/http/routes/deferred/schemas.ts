/**
 * JSON Schemas of the deferred facilitator routes, for the OpenAPI document. They describe and
 * never refuse: the spec gives each endpoint its own error shape (the reads' `error`, a flush's
 * `errorReason`, a voucher's `invalidReason`) with a sentence naming the problem, which Ajv's
 * messages would not carry, so the facilitator service (src/services/deferred-facilitator/) checks
 * the input and answers in that shape.
 */
const address = (description: string) => ({ type: 'string', description: `${description} (0x address)` }) as const
const bytes32 = (description: string) => ({ type: 'string', description: `${description} (32 bytes, 0x hex)` }) as const
const uint = (description: string) => ({ type: 'string', description: `${description} (decimal integer)` }) as const
const params = <P extends Record<string, { type: 'string'; description: string }>>(properties: P) =>
  ({ type: 'object', required: Object.keys(properties), properties }) as const

/** a field described, not checked (Ajv would coerce a number to a string before the service saw it) */
const text = (description: string) => ({ description }) as const
/**
 * A JSON body of these fields, documented; anything else is taken too (the second branch) and
 * answered by the service in the spec's refusal shape, naming the problem.
 */
const jsonBody = <P extends Record<string, unknown>>(properties: P) =>
  ({
    anyOf: [
      { type: 'object', properties },
      { description: 'anything else: refused with 400 in the spec error shape, naming the problem' },
    ],
  }) as const

const tags = ['deferred facilitator']
// no credentials: each write is authorized by a buyer's signature
const security: never[] = []

export const buyerAccountSchema = {
  tags,
  security,
  summary: 'the escrow account of a buyer for a seller, and its latest voucher',
  params: params({ buyer: address('the buyer') }),
  querystring: {
    type: 'object',
    properties: {
      seller: address('the seller'),
      asset: address('the asset'),
      escrow: address("this facilitator's escrow"),
      chainId: uint("this facilitator's chain id"),
    },
  },
} as const

export const availableVoucherSchema = {
  tags,
  security,
  summary: 'the voucher to aggregate onto',
  params: params({ buyer: address('the buyer'), seller: address('the seller') }),
} as const

export const storedVoucherSchema = {
  tags,
  security,
  summary: 'one stored voucher',
  params: params({ id: bytes32('the voucher id'), nonce: uint('the voucher nonce') }),
} as const

export const flushSchema = {
  tags,
  security,
  summary: "a buyer's flush (or flush-all) authorization, sent to the escrow by a relayer",
  params: params({ buyer: address('the buyer') }),
  body: jsonBody({
    flushAuthorization: {
      type: 'object',
      description: '{buyer, seller?, asset?, nonce, expiry, signature}; no seller and asset: flush all',
      properties: {
        buyer: text('the buyer (0x address), as in the path'),
        seller: text('the seller (0x address)'),
        asset: text('the asset (0x address)'),
        nonce: text('32 bytes, 0x hex'),
        expiry: text('unix seconds'),
        signature: text("the buyer's EIP-712 signature (0x hex)"),
      },
    },
    escrow: text("this facilitator's escrow (0x address)"),
    chainId: text("this facilitator's chain id"),
  }),
} as const

export const storeVoucherSchema = {
  tags,
  security,
  summary: 'store a voucher, verified as the proxy verifies a call paid with it',
  body: jsonBody({
    paymentPayload: {
      type: 'object',
      description: "{scheme: 'deferred', network, payload: {voucher, signature, deposit? | depositAuthorization?}}",
    },
    paymentRequirements: {
      type: 'object',
      description: "{scheme: 'deferred', network, payTo | recipient, amount | maxAmountRequired, asset, extra?}",
    },
  }),
} as const

export const settleSchema = {
  tags,
  security,
  summary: 'collect a stored voucher on chain now (at most once a minute per voucher id)',
  params: params({ id: bytes32('the voucher id'), nonce: uint('the voucher nonce') }),
} as const

/**
 * The 402 challenge of one endpoint and method, built once and reused for every unpaid or
 * refused request: a v1 JSON body (legacy `x402-fetch`) and a v2 `PAYMENT-REQUIRED` header
 * (`@x402/fetch`) in one response.
 *
 * Shapes follow the official servers: the legacy express middleware for v1 (checksummed
 * addresses, `outputSchema: { input: { type: 'http', method, discoverable, ... }, output }`,
 * `extra: { name, version }`) and `x402ResourceServer.createPaymentRequiredResponse` for v2,
 * with the Bazaar discovery declaration under `extensions.bazaar`. Optional fields are omitted,
 * never `null` (the legacy client's zod schema rejects `null`).
 */
import { getAddress } from 'viem'
import { PAYMENT_IDENTIFIER, PAYMENT_ID_MAX_LENGTH, paymentIdentifierDeclaration } from './payment-identifier.js'
import { reasons, type ReasonCode } from './reasons.js'
import { SIGN_IN_WITH_X, signInDeclaration, type SignInTerms } from './sign-in-with-x.js'
import type {
  HttpMethod,
  NetworkV1,
  NetworkV2,
  OutputSchemaV1,
  PaymentRequiredV1,
  PaymentRequiredV2,
  PaymentRequirementsV1,
  PaymentRequirementsV2,
  ResourceInfo,
} from './types.js'

export interface ChallengeChain {
  chainId: number
  network: NetworkV1
  caip2: string
  usdc: { address: string; name: string; version: string }
}

/** A JSON Schema object for the endpoint input (`{ type: 'object', properties, required }`). */
export type InputSchema = {
  type?: string
  properties?: Record<string, unknown>
  required?: readonly string[]
  [k: string]: unknown
}

export interface ChallengeInput {
  /** absolute URL of the paid resource */
  resourceUrl: string
  description: string
  mimeType: string
  payTo: string
  /** price in atomic units */
  amount: bigint | string
  maxTimeoutSeconds: number
  chain: ChallengeChain
  method: string
  inputSchema?: InputSchema
  /** a valid input (query parameters or JSON body): the Bazaar declaration's example request */
  inputExample?: Record<string, unknown>
  /** JSON Schema or description of the output; `example` in it is used for Bazaar v2 */
  outputDescription?: Record<string, unknown>
  /** advertise to discovery services (v1 `discoverable`, v2 `extensions.bazaar`); default true */
  discoverable?: boolean
  /** v2 requirements of other schemes the endpoint offers, after exact's (the v1 body stays exact only) */
  extraAccepts?: readonly PaymentRequirementsV2[]
  /** declare the v2 `payment-identifier` extension (safe retries: payment-identifier.ts); default false */
  paymentIdentifier?: boolean
  /** declare the v2 `sign-in-with-x` extension (paid access: sign-in-with-x.ts), with a fresh nonce per 402 */
  signIn?: SignInTerms
}

/** What verify-requirements needs, normalized once. */
export interface PaymentTerms {
  amount: bigint
  /** lower-case */
  payTo: `0x${string}`
  /** lower-case */
  asset: `0x${string}`
  networkV1: NetworkV1
  networkV2: NetworkV2
  chainId: number
  token: { name: string; version: string }
  maxTimeoutSeconds: number
}

export interface Challenge {
  readonly v1Body: PaymentRequiredV1
  /** `v1Body` pre-serialized, for the 402 body */
  readonly v1BodyJson: string
  /** `v1BodyJson` encoded once as UTF-8, so the hot path sends bytes without re-encoding them */
  readonly v1BodyBytes: Buffer
  readonly v2: PaymentRequiredV2
  /** standard base64 of the v2 JSON, for the `PAYMENT-REQUIRED` header */
  readonly v2HeaderValue: string
  readonly requirementsV1: PaymentRequirementsV1
  readonly requirementsV2: PaymentRequirementsV2
  readonly terms: PaymentTerms
  /**
   * Bytes a v2 `PAYMENT-SIGNATURE` header for this challenge can reach: v2 clients echo
   * `resource`, `accepted` and `extensions` back, so the header-size cap must allow this.
   */
  readonly paymentHeaderBudget: number
  /**
   * Set when the 402 declares `sign-in-with-x`: its v2 header is then built per response (a fresh
   * nonce each time) by `paymentRequiredHeader`, and `v2`/`v2HeaderValue` leave the declaration out.
   */
  readonly signIn?: SignInTerms
  /** @internal precomputed pieces for withError */
  readonly parts: ChallengeParts
}

interface ChallengeParts {
  v1Head: string
  v1Tail: string
  /** base64 of the v2 JSON up to (not including) the error member, padded to 3-byte multiple */
  v2HeadB64: string
  cache: Map<string, ChallengeWithError>
}

export interface ChallengeWithError {
  v1BodyJson: string
  v2HeaderValue: string
}

const V1_NO_PAYMENT_ERROR = 'X-PAYMENT header is required'
const V2_NO_PAYMENT_ERROR = 'PAYMENT-SIGNATURE header is required'
const QUERY_METHODS = new Set(['GET', 'HEAD', 'DELETE'])
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH'])
const HTTP_METHODS = new Set(['GET', 'HEAD', 'DELETE', 'POST', 'PUT', 'PATCH', 'OPTIONS'])

/**
 * Build the challenge for one endpoint + method. Throws on invalid configuration (bad URL,
 * address, amount); that is a seller-setup error, never a client one.
 *
 * @example
 *   const ch = buildChallenge({ resourceUrl, description, mimeType: 'application/json', payTo,
 *     amount: 10_000n, maxTimeoutSeconds: 60, chain: config.chain, method: 'GET' })
 *   reply.code(402).header('PAYMENT-REQUIRED', ch.v2HeaderValue).type('application/json').send(ch.v1BodyJson)
 */
export function buildChallenge(input: ChallengeInput): Challenge {
  const c = checkedInput(input)
  const { requirementsV1, requirementsV2 } = requirementsOf(input, c)
  const resource: ResourceInfo = { url: input.resourceUrl }
  if (input.description !== '') resource.description = input.description
  if (input.mimeType !== '') resource.mimeType = input.mimeType

  // v2 members in a fixed order with `error` last, so withError only encodes a short tail
  const v2NoError: Omit<PaymentRequiredV2, 'error'> = {
    x402Version: 2,
    resource,
    accepts: [requirementsV2, ...(input.extraAccepts ?? [])],
  }
  const extensions = extensionsOf(input, c)
  if (extensions) v2NoError.extensions = extensions
  const parts = precomputedParts(requirementsV1, v2NoError)
  const v1BodyJson = parts.v1Head + JSON.stringify(V1_NO_PAYMENT_ERROR) + parts.v1Tail
  const challenge: Challenge = {
    v1Body: { x402Version: 1, error: V1_NO_PAYMENT_ERROR, accepts: [requirementsV1] },
    v1BodyJson,
    v1BodyBytes: Buffer.from(v1BodyJson),
    v2: { ...v2NoError, error: V2_NO_PAYMENT_ERROR },
    v2HeaderValue: parts.v2HeadB64 + v2ErrorTailB64(V2_NO_PAYMENT_ERROR),
    requirementsV1,
    requirementsV2,
    terms: {
      amount: c.amount,
      payTo: c.payTo.toLowerCase() as `0x${string}`,
      asset: c.asset.toLowerCase() as `0x${string}`,
      networkV1: input.chain.network,
      networkV2: input.chain.caip2 as NetworkV2,
      chainId: input.chain.chainId,
      token: { ...c.extra },
      maxTimeoutSeconds: input.maxTimeoutSeconds,
    },
    paymentHeaderBudget: headerBudgetOf(input, v2NoError),
    parts,
  }
  if (input.signIn) return { ...challenge, signIn: input.signIn }
  return challenge
}

interface CheckedInput {
  method: HttpMethod
  amount: bigint
  payTo: `0x${string}`
  asset: `0x${string}`
  extra: { name: string; version: string }
  discoverable: boolean
}

/** The input's parts checked and normalised (checksummed addresses, atomic amount); throws on a setup error. */
function checkedInput(input: ChallengeInput): CheckedInput {
  const method = input.method.toUpperCase()
  if (!HTTP_METHODS.has(method)) throw new Error(`challenge: unsupported method ${input.method}`)
  // kept verbatim (v2 clients echo it), only checked to be absolute
  if (!URL.canParse(input.resourceUrl)) throw new Error(`challenge: resourceUrl must be absolute: ${input.resourceUrl}`)
  const amount = toAtomic(input.amount)
  if (!Number.isSafeInteger(input.maxTimeoutSeconds) || input.maxTimeoutSeconds <= 0) {
    throw new Error(`challenge: maxTimeoutSeconds must be a positive integer, got ${input.maxTimeoutSeconds}`)
  }
  const { chain } = input
  if (chain.caip2 !== `eip155:${chain.chainId}`) {
    throw new Error(`challenge: caip2 ${chain.caip2} does not match chain id ${chain.chainId}`)
  }
  return {
    method: method as HttpMethod,
    amount,
    payTo: getAddress(input.payTo),
    asset: getAddress(chain.usdc.address),
    extra: { name: chain.usdc.name, version: chain.usdc.version },
    discoverable: input.discoverable ?? true,
  }
}

/** The `exact` requirement in v1 and v2 shape. */
function requirementsOf(input: ChallengeInput, c: CheckedInput) {
  const requirementsV1: PaymentRequirementsV1 = {
    scheme: 'exact',
    network: input.chain.network,
    maxAmountRequired: c.amount.toString(),
    resource: input.resourceUrl,
    description: input.description,
    mimeType: input.mimeType,
    payTo: c.payTo,
    maxTimeoutSeconds: input.maxTimeoutSeconds,
    asset: c.asset,
    outputSchema: outputSchemaV1(c.method, c.discoverable, input.inputSchema, input.outputDescription),
    extra: { ...c.extra },
  }
  const requirementsV2: PaymentRequirementsV2 = {
    scheme: 'exact',
    network: input.chain.caip2 as NetworkV2,
    amount: c.amount.toString(),
    asset: c.asset,
    payTo: c.payTo,
    maxTimeoutSeconds: input.maxTimeoutSeconds,
    extra: { ...c.extra },
  }
  return { requirementsV1, requirementsV2 }
}

/** The v2 extensions the 402 declares (bazaar, payment-identifier), or undefined for none. */
function extensionsOf(input: ChallengeInput, c: CheckedInput): Record<string, unknown> | undefined {
  const extensions: Record<string, unknown> = {}
  const bazaar = c.discoverable
    ? bazaarExtension(c.method, input.inputSchema, input.outputDescription, input.inputExample)
    : undefined
  if (bazaar !== undefined) extensions.bazaar = bazaar
  if (input.paymentIdentifier) extensions[PAYMENT_IDENTIFIER] = paymentIdentifierDeclaration()
  return Object.keys(extensions).length > 0 ? extensions : undefined
}

/** The encoded pieces `withError` joins a reason to, so a 402 with an error encodes only its tail. */
function precomputedParts(
  requirementsV1: PaymentRequirementsV1,
  v2NoError: Omit<PaymentRequiredV2, 'error'>,
): ChallengeParts {
  let v2Head = JSON.stringify(v2NoError).slice(0, -1)
  // JSON allows insignificant whitespace: pad so the head ends on a base64 group boundary
  v2Head += ' '.repeat((3 - (Buffer.byteLength(v2Head) % 3)) % 3)
  return {
    v1Head: '{"x402Version":1,"error":',
    v1Tail: `,"accepts":${JSON.stringify([requirementsV1])}}`,
    v2HeadB64: Buffer.from(v2Head).toString('base64'),
    cache: new Map(),
  }
}

/** The largest payment header any of the offers can take (sign-in's declaration counted when declared). */
function headerBudgetOf(input: ChallengeInput, v2NoError: Omit<PaymentRequiredV2, 'error'>): number {
  const extensions = input.signIn
    ? { ...v2NoError.extensions, [SIGN_IN_WITH_X]: signInDeclaration(input.signIn) }
    : v2NoError.extensions
  return Math.max(...v2NoError.accepts.map((a) => paymentHeaderBudget(v2NoError.resource, a, extensions)))
}

/**
 * The v2 `PAYMENT-REQUIRED` header of one 402, with the refusal's reason when there is one: the
 * precomputed value, or, for a challenge that declares `sign-in-with-x`, one built now with a fresh
 * sign-in challenge (the spec: every 402 a new nonce).
 */
export function paymentRequiredHeader(challenge: Challenge, reason?: ReasonCode): string {
  if (!challenge.signIn) return reason ? withError(challenge, reason).v2HeaderValue : challenge.v2HeaderValue
  const { error: _error, ...rest } = challenge.v2
  const v2 = {
    ...rest,
    extensions: { ...rest.extensions, [SIGN_IN_WITH_X]: signInDeclaration(challenge.signIn) },
    error: reason ?? challenge.v2.error,
  }
  return Buffer.from(JSON.stringify(v2)).toString('base64')
}

/**
 * The challenge carrying a refusal reason: v1 body `{x402Version, error: reason, message,
 * accepts}` and the v2 header with `error: reason`. Memoized per reason unless a custom
 * message is given.
 */
export function withError(challenge: Challenge, reason: ReasonCode, message?: string): ChallengeWithError {
  const { parts } = challenge
  if (message === undefined) {
    const hit = parts.cache.get(reason)
    if (hit !== undefined) return hit
  }
  const text = message ?? reasons[reason].message
  const out: ChallengeWithError = {
    v1BodyJson: `${parts.v1Head}${JSON.stringify(reason)},"message":${JSON.stringify(text)}${parts.v1Tail}`,
    v2HeaderValue: parts.v2HeadB64 + v2ErrorTailB64(reason),
  }
  if (message === undefined) parts.cache.set(reason, out)
  return out
}

function v2ErrorTailB64(error: string): string {
  return Buffer.from(`,"error":${JSON.stringify(error)}}`).toString('base64')
}

function toAtomic(amount: bigint | string): bigint {
  if (typeof amount === 'bigint') {
    if (amount < 0n || amount >= 1n << 256n) throw new Error(`challenge: amount out of range: ${amount}`)
    return amount
  }
  if (!/^(?:0|[1-9][0-9]{0,77})$/.test(amount) || BigInt(amount) >= 1n << 256n) {
    throw new Error(`challenge: amount must be a decimal string of atomic units, got ${JSON.stringify(amount)}`)
  }
  return BigInt(amount)
}

/** v1 request structure, as the legacy middleware sends it under `outputSchema`. */
function outputSchemaV1(
  method: HttpMethod,
  discoverable: boolean,
  inputSchema: InputSchema | undefined,
  outputDescription: Record<string, unknown> | undefined,
): OutputSchemaV1 {
  const input: OutputSchemaV1['input'] = { type: 'http', method, discoverable }
  const fields = fieldsOf(inputSchema)
  if (fields !== undefined) {
    if (BODY_METHODS.has(method)) {
      input.bodyType = 'json'
      input.bodyFields = fields
    } else {
      input.queryParams = fields
    }
  }
  const out: OutputSchemaV1 = { input }
  if (outputDescription !== undefined) out.output = outputDescription
  return out
}

/** `{ name: propertySchema (+ required: true) }` from an object schema. */
function fieldsOf(schema: InputSchema | undefined): Record<string, unknown> | undefined {
  if (schema === undefined || schema.properties === undefined) return undefined
  const required = new Set(schema.required ?? [])
  const fields: Record<string, unknown> = {}
  for (const [name, prop] of Object.entries(schema.properties)) {
    fields[name] = required.has(name) && typeof prop === 'object' && prop !== null ? { ...prop, required: true } : prop
  }
  return fields
}

/**
 * v2 Bazaar discovery declaration (`@x402/extensions` bazaar `createQueryDiscoveryExtension` /
 * `createBodyDiscoveryExtension` shape): `info` is an example request, `schema` validates it.
 */
function bazaarExtension(
  method: string,
  inputSchema: InputSchema | undefined,
  outputDescription: Record<string, unknown> | undefined,
  inputExample: Record<string, unknown> = {},
): Record<string, unknown> | undefined {
  const isQuery = QUERY_METHODS.has(method)
  if (!isQuery && !BODY_METHODS.has(method)) return undefined
  const example = outputDescription?.example
  const infoOutput = example !== undefined ? { output: { type: 'json', example } } : {}
  const paramsSchema = { type: 'object', ...(inputSchema ?? { properties: {} }) }
  const schemaOutput =
    example !== undefined
      ? {
          output: {
            type: 'object',
            properties: { type: { type: 'string' }, example: { type: 'object' } },
            required: ['type'],
          },
        }
      : {}
  const inputProps = isQuery
    ? {
        type: { type: 'string', const: 'http' },
        method: { type: 'string', enum: ['GET', 'HEAD', 'DELETE'] },
        queryParams: paramsSchema,
      }
    : {
        type: { type: 'string', const: 'http' },
        method: { type: 'string', enum: ['POST', 'PUT', 'PATCH'] },
        bodyType: { type: 'string', enum: ['json', 'form-data', 'text'] },
        body: paramsSchema,
      }
  return {
    info: {
      input: isQuery
        ? { type: 'http', method, queryParams: inputExample }
        : { type: 'http', method, bodyType: 'json', body: inputExample },
      ...infoOutput,
    },
    schema: {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      properties: {
        input: {
          type: 'object',
          properties: inputProps,
          required: isQuery ? ['type', 'method'] : ['type', 'method', 'bodyType', 'body'],
          additionalProperties: false,
        },
        ...schemaOutput,
      },
      required: ['input'],
    },
  }
}

/** Upper bound of a v2 payment header for this challenge (base64 length, with slack). */
function paymentHeaderBudget(
  resource: ResourceInfo,
  accepted: PaymentRequirementsV2,
  extensions: Record<string, unknown> | undefined,
): number {
  const u256 = '9'.repeat(78)
  const worst = {
    x402Version: 2,
    resource,
    accepted,
    payload: {
      signature: `0x${'f'.repeat(130)}`,
      authorization: {
        from: `0x${'f'.repeat(40)}`,
        to: `0x${'f'.repeat(40)}`,
        value: u256,
        validAfter: u256,
        validBefore: u256,
        nonce: `0x${'f'.repeat(64)}`,
      },
    },
    extensions: withLongestPaymentId(extensions),
  }
  return Math.ceil(Buffer.byteLength(JSON.stringify(worst)) / 3) * 4 + 256
}

/** The declared extensions as a client echoes them with the longest `payment-identifier` id. */
function withLongestPaymentId(extensions: Record<string, unknown> | undefined): Record<string, unknown> | undefined {
  const declared = extensions?.[PAYMENT_IDENTIFIER] as { info: Record<string, unknown> } | undefined
  if (!declared) return extensions
  return {
    ...extensions,
    [PAYMENT_IDENTIFIER]: { ...declared, info: { ...declared.info, id: 'x'.repeat(PAYMENT_ID_MAX_LENGTH) } },
  }
}

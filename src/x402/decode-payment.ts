/**
 * Decode and shape-check the payment of a paid request: `PAYMENT-SIGNATURE` (x402 v2) or
 * `X-PAYMENT` (x402 v1), each standard base64 of JSON as the official clients send it
 * (`btoa(JSON.stringify(payload))`), or over MCP the v2 PaymentPayload as a JSON value in
 * `params._meta["x402/payment"]`.
 *
 * Strict and total: every input, however hostile, gives either a typed payload or a refusal
 * with an x402 reason; nothing throws. The checks here are about form (sizes, hex lengths,
 * uint256 decimal strings); whether the payment fits the endpoint is verify-requirements.ts.
 */
import { refuse, type Refusal } from './reasons.js'
import type {
  AcceptedRequirementsV2,
  ExactEvmAuthorization,
  ExactEvmPayload,
  HexString,
  PaymentPayloadV1,
  PaymentPayloadV2,
  ResourceInfo,
} from './types.js'

export interface PaymentHeaders {
  /** `X-PAYMENT` (v1) */
  xPayment?: string
  /** `PAYMENT-SIGNATURE` (v2) */
  paymentSignature?: string
  /** MCP: `params._meta["x402/payment"]` as received, a v2 PaymentPayload already parsed from JSON */
  mcpPayment?: unknown
}

export type DecodedPayment =
  | { ok: true; version: 1; payload: PaymentPayloadV1 }
  | { ok: true; version: 2; payload: PaymentPayloadV2; accepted: AcceptedRequirementsV2 }

export type DecodePaymentResult = DecodedPayment | Refusal

/**
 * A payment header decoded up to its scheme: the envelope every scheme shares (version, scheme,
 * network, and for v2 the `accepted` requirement, `resource` and `extensions`), with the scheme's
 * own `payload` still unchecked. Each scheme reads its payload (exact: `decodeExactPayment`).
 */
export type PaymentEnvelope =
  | { ok: true; version: 1; scheme: string; network: string; payload: unknown }
  | {
      ok: true
      version: 2
      scheme: string
      network: string
      accepted: AcceptedRequirementsV2
      resource?: ResourceInfo
      extensions?: Record<string, unknown>
      payload: unknown
    }

/** Bytes of a `PAYMENT-SIGNATURE` / `X-PAYMENT` value we accept unless configured otherwise. */
export const DEFAULT_MAX_PAYMENT_HEADER_BYTES = 8192

const BASE64_RE = /^[A-Za-z0-9+/]*={0,2}$/
const ADDRESS_RE = /^0x[0-9a-fA-F]{40}$/
const BYTES32_RE = /^0x[0-9a-fA-F]{64}$/
const HEX_RE = /^0x(?:[0-9a-fA-F]{2})+$/
const UINT_RE = /^(?:0|[1-9][0-9]{0,77})$/
const U256_MAX = (1n << 256n) - 1n
const FORBIDDEN_KEYS = new Set(['__proto__', 'constructor', 'prototype'])
/** longest string field we keep from client-controlled objects (urls, descriptions, networks) */
const MAX_STRING = 2048

/**
 * Decode the payment header's envelope. When both are present the v2 header wins, as in the
 * official v2 server. A missing header gives `payment_required`. Never throws.
 */
export function decodePaymentEnvelope(headers: PaymentHeaders, maxBytes: number): PaymentEnvelope | Refusal {
  try {
    if (headers.mcpPayment !== undefined) return decodeMcpPayment(headers.mcpPayment, maxBytes)
    const v2 = headers.paymentSignature
    const v1 = headers.xPayment
    if (typeof v2 === 'string' && v2.length > 0) return decodeOne(v2, 2, maxBytes)
    if (typeof v1 === 'string' && v1.length > 0) return decodeOne(v1, 1, maxBytes)
    if (v2 !== undefined || v1 !== undefined) return refuse('invalid_payload', 'the payment header is empty')
    return refuse('payment_required')
  } catch {
    // unreachable by design; the catch keeps the "never throws" promise if a check is wrong
    return refuse('invalid_payload')
  }
}

/** An envelope's payload as the `exact` scheme's (EIP-3009 signature and authorization). */
export function decodeExactPayment(envelope: PaymentEnvelope): DecodePaymentResult {
  const payload = readExactEvmPayload(envelope.payload)
  if ('ok' in payload) return payload
  if (envelope.version === 1)
    return {
      ok: true,
      version: 1,
      payload: { x402Version: 1, scheme: envelope.scheme, network: envelope.network, payload },
    }
  const out: PaymentPayloadV2 = { x402Version: 2, accepted: envelope.accepted, payload }
  if (envelope.resource !== undefined) out.resource = envelope.resource
  if (envelope.extensions !== undefined) out.extensions = envelope.extensions
  return { ok: true, version: 2, payload: out, accepted: envelope.accepted }
}

/**
 * Decode the payment header as an `exact` payment (the envelope, then its payload).
 *
 * @example
 *   const d = decodePaymentHeader({ xPayment: req.headers['x-payment'], paymentSignature: req.headers['payment-signature'] }, 8192)
 *   if (!d.ok) return reply402(d.reason, d.message, d.status)
 */
export function decodePaymentHeader(headers: PaymentHeaders, maxBytes: number): DecodePaymentResult {
  const envelope = decodePaymentEnvelope(headers, maxBytes)
  return envelope.ok ? decodeExactPayment(envelope) : envelope
}

function decodeOne(value: string, headerVersion: 1 | 2, maxBytes: number): PaymentEnvelope | Refusal {
  const header = headerVersion === 2 ? 'PAYMENT-SIGNATURE' : 'X-PAYMENT'
  if (value.length > maxBytes) {
    return refuse('payment_header_too_large', `${header} is ${value.length} bytes, the limit is ${maxBytes}`)
  }
  if (!BASE64_RE.test(value) || value.length % 4 === 1) {
    return refuse('invalid_payload', `${header} is not standard base64`)
  }
  let json: unknown
  try {
    json = JSON.parse(Buffer.from(value, 'base64').toString('utf8'))
  } catch {
    return refuse('invalid_payload', `${header} is not base64 of a JSON object`)
  }
  // checked after parsing: a JSON.parse reviver costs a function call per value on the hot path
  if (hasForbiddenKey(json)) return refuse('invalid_payload', `${header} is not base64 of a JSON object`)
  if (!isPlainObject(json)) return refuse('invalid_payload', `${header} is not base64 of a JSON object`)
  return readEnvelope(json, headerVersion, header)
}

/** MCP's `_meta["x402/payment"]`: the v2 PaymentPayload as a JSON value (the MCP message was parsed already). */
function decodeMcpPayment(
  value: unknown,
  maxBytes: number,
  where = '_meta["x402/payment"]',
  zeroTimeout = false,
): PaymentEnvelope | Refusal {
  if (!isPlainObject(value) || hasForbiddenKey(value))
    return refuse('invalid_payload', `${where} must be a PaymentPayload object`)
  // the same budget as the header's; JSON is shorter than its base64, so this is the looser bound
  const size = JSON.stringify(value).length
  if (size > maxBytes)
    return refuse('payment_header_too_large', `${where} is ${size} bytes of JSON, the limit is ${maxBytes}`)
  if (value.x402Version !== 2) return refuse('invalid_x402_version', `${where} must carry x402Version 2`)
  return readEnvelope(value, 2, where, zeroTimeout)
}

/**
 * The `paymentPayload` of a facilitator call (`POST /facilitator/verify`, `/settle`): as MCP's, and
 * `accepted.maxTimeoutSeconds` may be 0 (the requirement a batch-settlement server's channel
 * manager builds for its own claim and settle). Never throws.
 */
export function decodeFacilitatorPayload(value: unknown, maxBytes: number): PaymentEnvelope | Refusal {
  try {
    return decodeMcpPayment(value, maxBytes, 'paymentPayload', true)
  } catch {
    return refuse('invalid_payload')
  }
}

/** The envelope of a parsed payment object; `header` names where it came from in refusals. */
function readEnvelope(
  json: Record<string, unknown>,
  headerVersion: 1 | 2,
  header: string,
  zeroTimeout = false,
): PaymentEnvelope | Refusal {
  const version = json.x402Version
  if (version !== 1 && version !== 2) return refuse('invalid_x402_version')
  if (version !== headerVersion) {
    return refuse('invalid_x402_version', `${header} must carry x402Version ${headerVersion}`)
  }
  if (!isPlainObject(json.payload)) return refuse('invalid_payload', 'payload must be an object')

  if (version === 1) {
    if (!isShortString(json.scheme)) return refuse('invalid_payload', 'scheme must be a string')
    if (!isShortString(json.network)) return refuse('invalid_payload', 'network must be a string')
    return { ok: true, version: 1, scheme: json.scheme, network: json.network, payload: json.payload }
  }

  const accepted = readAccepted(json.accepted, zeroTimeout)
  if (typeof accepted === 'string') return refuse('invalid_payload', accepted)
  const out: Extract<PaymentEnvelope, { version: 2 }> = {
    ok: true,
    version: 2,
    scheme: accepted.scheme,
    network: accepted.network,
    accepted,
    payload: json.payload,
  }
  if (json.resource !== undefined) {
    const resource = readResource(json.resource)
    if (typeof resource === 'string') return refuse('invalid_payload', resource)
    out.resource = resource
  }
  if (json.extensions !== undefined && json.extensions !== null) {
    if (!isPlainObject(json.extensions)) return refuse('invalid_payload', 'extensions must be an object')
    out.extensions = json.extensions
  }
  return out
}

/** JSON.parse reviver: a `__proto__` (or `constructor`/`prototype`) key anywhere is refused. */
/** true when any object in the parsed value has an own key in FORBIDDEN_KEYS (any depth, no recursion). */
function hasForbiddenKey(root: unknown): boolean {
  const stack: unknown[] = [root]
  while (stack.length > 0) {
    const v = stack.pop()
    if (v === null || typeof v !== 'object') continue
    if (Array.isArray(v)) {
      for (const item of v) if (item !== null && typeof item === 'object') stack.push(item)
      continue
    }
    for (const key of Object.keys(v)) {
      if (FORBIDDEN_KEYS.has(key)) return true
      const child = (v as Record<string, unknown>)[key]
      if (child !== null && typeof child === 'object') stack.push(child)
    }
  }
  return false
}

function readExactEvmPayload(v: unknown): ExactEvmPayload | Refusal {
  if (!isPlainObject(v)) return refuse('invalid_payload', 'payload must be an object')
  if (v.authorization === undefined && (v.permit2Authorization !== undefined || v.transaction !== undefined)) {
    return refuse('unsupported_payload_type') // Permit2 or SVM payloads
  }
  const bad = (detail: string) => refuse('invalid_payload', detail)
  if (!hasOnlyKeys(v, PAYLOAD_KEYS)) return bad('payload has unexpected fields')
  const sig = v.signature
  if (typeof sig !== 'string' || !HEX_RE.test(sig)) return bad('payload.signature must be 0x-prefixed hex bytes')
  const a = v.authorization
  if (!isPlainObject(a)) return bad('payload.authorization must be an object')
  if (!hasOnlyKeys(a, AUTHORIZATION_KEYS))
    return bad('payload.authorization must have exactly from, to, value, validAfter, validBefore, nonce')
  for (const k of ['from', 'to'] as const) {
    if (typeof a[k] !== 'string' || !ADDRESS_RE.test(a[k]))
      return bad(`authorization.${k} must be a 20-byte 0x address`)
  }
  for (const k of ['value', 'validAfter', 'validBefore'] as const) {
    if (!isUint256String(a[k])) return bad(`authorization.${k} must be a decimal uint256 string`)
  }
  if (typeof a.nonce !== 'string' || !BYTES32_RE.test(a.nonce))
    return bad('authorization.nonce must be 32 bytes of 0x hex')
  const authorization: ExactEvmAuthorization = {
    from: a.from as HexString,
    to: a.to as HexString,
    value: a.value as string,
    validAfter: a.validAfter as string,
    validBefore: a.validBefore as string,
    nonce: a.nonce as HexString,
  }
  return { signature: sig as HexString, authorization }
}

const PAYLOAD_KEYS = new Set(['signature', 'authorization'])
const AUTHORIZATION_KEYS = new Set(['from', 'to', 'value', 'validAfter', 'validBefore', 'nonce'])
const AUTHORIZATION_KEY_COUNT = AUTHORIZATION_KEYS.size

function readAccepted(v: unknown, zeroTimeout: boolean): AcceptedRequirementsV2 | string {
  if (!isPlainObject(v)) return 'accepted must be an object'
  for (const k of ['scheme', 'network', 'amount', 'asset', 'payTo'] as const) {
    if (!isShortString(v[k])) return `accepted.${k} must be a string`
  }
  const t = v.maxTimeoutSeconds
  if (typeof t !== 'number' || !Number.isSafeInteger(t) || t < (zeroTimeout ? 0 : 1)) {
    return `accepted.maxTimeoutSeconds must be a ${zeroTimeout ? 'non-negative' : 'positive'} integer`
  }
  if (v.extra !== undefined && v.extra !== null && !isPlainObject(v.extra)) return 'accepted.extra must be an object'
  // keep it as sent: v2 matching compares it verbatim with what we issued
  return v as AcceptedRequirementsV2
}

function readResource(v: unknown): ResourceInfo | string {
  if (!isPlainObject(v) || !isShortString(v.url)) return 'resource.url must be a string'
  const r: ResourceInfo = { url: v.url }
  if (v.description !== undefined) {
    if (!isString(v.description)) return 'resource.description must be a string'
    r.description = v.description
  }
  if (v.mimeType !== undefined) {
    if (!isString(v.mimeType)) return 'resource.mimeType must be a string'
    r.mimeType = v.mimeType
  }
  return r
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

function hasOnlyKeys(o: Record<string, unknown>, allowed: Set<string>): boolean {
  let n = 0
  for (const k in o) {
    if (!allowed.has(k)) return false
    n++
  }
  return allowed === AUTHORIZATION_KEYS ? n === AUTHORIZATION_KEY_COUNT : true
}

function isShortString(v: unknown): v is string {
  return typeof v === 'string' && v.length > 0 && v.length <= MAX_STRING
}

function isString(v: unknown): v is string {
  return typeof v === 'string' && v.length <= MAX_STRING
}

function isUint256String(v: unknown): v is string {
  if (typeof v !== 'string' || !UINT_RE.test(v)) return false
  return v.length < 78 || BigInt(v) <= U256_MAX
}

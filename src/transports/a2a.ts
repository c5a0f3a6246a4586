import type { IncomingHttpHeaders } from 'node:http'
import type { FastifyBaseLogger } from 'fastify'
import { appErrorBody } from '../error-render.js'
import type { CallRefusal, CallRequest, CallResult, PaymentReceipt, PaymentTransport } from '../seam/types.js'
import type { Challenge } from '../x402/challenge.js'
import { reasons } from '../x402/reasons.js'
import type { PaymentRequiredV2, SettlementResponse } from '../x402/types.js'
import { bodyBytes, MCP_MAX_ANSWER_BYTES, queryString, toolMethod } from './mcp.js'
import { settlementResponseOf } from './receipt.js'

/** The x402 A2A extension (specs/transports-v2/a2a.md): declared in the Agent Card, activated per request. */
export const X402_A2A_EXTENSION = 'https://github.com/google-a2a/a2a-x402/v0.1'
/** message metadata keys of the x402 A2A transport */
const A2A_META = {
  status: 'x402.payment.status',
  required: 'x402.payment.required',
  payload: 'x402.payment.payload',
  receipts: 'x402.payment.receipts',
  error: 'x402.payment.error',
} as const

/**
 * The content type of a seller's A2A agent's answer as it moves through the paid-call stages: the
 * agent's parts as JSON (`{ parts, text }`); over A2A they are passed on, over HTTP it is the body.
 */
export const A2A_AGENT_RESULT_TYPE = 'application/vnd.tollgate.a2a-result+json'

/** A part of an A2A message, as the transport renders it (the route builds the SDK's Part from it). */
export type A2aPart =
  | { kind: 'text'; text: string }
  | { kind: 'data'; data: unknown }
  | { kind: 'file'; bytes: Buffer; mediaType: string; name?: string }

/** What a paid call comes to as an A2A task. */
export interface A2aOutcome {
  state: 'completed' | 'failed' | 'input-required'
  /** the status message's text, for a reader */
  text: string
  /** the status message's metadata: the x402.payment.* keys */
  metadata: Record<string, unknown>
  /** the endpoint's answer (an artifact) */
  parts: A2aPart[]
}

/** One `message/send` naming a skill: the skill resolved to its endpoint, and what came with it. */
interface A2aSkillCall {
  /** `/<namespace>/<service>/<slug>` */
  path: string
  methods: ReadonlySet<string> | undefined
  resourceUrl: string
  input: Record<string, unknown>
  /** `x402.payment.payload` as received; undefined when the message carries none */
  payment: unknown
  headers: IncomingHttpHeaders
  log: FastifyBaseLogger
}

export type A2aTransport = PaymentTransport<A2aSkillCall, A2aSkillCall, Promise<A2aOutcome>>

const QUERY_METHODS = new Set(['GET', 'HEAD', 'DELETE'])
// headers of the A2A exchange itself, not of the call
const A2A_HEADERS = new Set([
  'content-type',
  'content-length',
  'accept',
  'a2a-version',
  'a2a-extensions',
  'x-a2a-extensions',
])

/**
 * x402 over A2A (specs/transports-v2/a2a.md): the payment in the message's
 * `x402.payment.payload` metadata (a v2 PaymentPayload); the challenge as a task in
 * `input-required` with `x402.payment.status: payment-required` and the PaymentRequired in
 * `x402.payment.required`; the receipt in `x402.payment.receipts` of the completed task. A refused
 * payment, and an endpoint that failed (its payment voided), is a `failed` task with
 * `payment-failed` and the reason in `x402.payment.error`; any other refusal (unknown skill, bad
 * input) is a `failed` task naming the catalogue error.
 */
export function createA2aTransport(chain: { caip2: string }): A2aTransport {
  const receiptOf = (r: PaymentReceipt): SettlementResponse => settlementResponseOf(r, chain.caip2)

  return {
    name: 'a2a',

    request: skillCallRequest,

    async send(call, result: CallResult): Promise<A2aOutcome> {
      if (result.kind === 'refused') return refusedOutcome(call, result.refusal, result.challenge, chain.caip2)
      const bytes = await bodyBytes(result.body)
      const receipts = result.receipt ? [receiptOf(result.receipt)] : undefined
      if (bytes === undefined) {
        call.log.warn({ endpoint: call.path }, 'answer too large for an A2A task')
        return {
          state: 'failed',
          text: `the answer is larger than ${MCP_MAX_ANSWER_BYTES} bytes, which an A2A task does not carry; use ${call.resourceUrl} over HTTP`,
          metadata: receipts ? { [A2A_META.status]: 'payment-completed', [A2A_META.receipts]: receipts } : {},
          parts: [],
        }
      }
      const contentType = result.contentType ?? headerValue(result.headers?.['content-type'])
      const parts = contentType === A2A_AGENT_RESULT_TYPE ? agentParts(bytes) : partsOf(bytes, contentType)
      if (result.status >= 400 || !receipts) {
        return {
          state: 'failed',
          text: `the endpoint failed (status ${result.status}); its payment was voided, nothing was charged`,
          metadata: {
            [A2A_META.status]: 'payment-failed',
            [A2A_META.error]: 'endpoint_failed',
            [A2A_META.receipts]: [
              failedReceipt(chain.caip2, `the endpoint answered ${result.status}; the payment was voided`),
            ],
            'tollgate.status': result.status,
          },
          parts,
        }
      }
      return {
        state: 'completed',
        text: 'Payment accepted; the answer is in the artifact.',
        metadata: { [A2A_META.status]: 'payment-completed', [A2A_META.receipts]: receipts },
        parts,
      }
    },
  }
}

/** A skill call as the stages see it: the endpoint's method, the input as its query or JSON body, the payment from the metadata. */
function skillCallRequest(call: A2aSkillCall): CallRequest {
  const method = toolMethod(call.methods)
  const inQuery = QUERY_METHODS.has(method)
  const query = inQuery ? queryString(call.input) : ''
  const headers: IncomingHttpHeaders = { accept: '*/*' }
  for (const [k, v] of Object.entries(call.headers)) if (!A2A_HEADERS.has(k)) headers[k] = v
  if (!inQuery) headers['content-type'] = 'application/json'
  return {
    path: call.path,
    method,
    // a v2 PaymentPayload already parsed from JSON, as MCP's `_meta` carries it
    payment: call.payment === undefined ? undefined : { mcpPayment: call.payment },
    input: { ...call.input },
    query: {},
    body: inQuery ? undefined : Buffer.from(JSON.stringify(call.input)),
    headers,
    url: query ? `${call.path}?${query}` : call.path,
    log: call.log,
  }
}

/** The receipt of a payment that was not kept: nothing was charged, and why. */
function failedReceipt(network: string, errorReason: string) {
  return { success: false, errorReason, network, transaction: '' }
}

/**
 * A refusal: a catalogue error is a `failed` task naming it (and `payment-failed` when the message
 * carried a payment); a payment refusal, or none sent, is the challenge.
 */
function refusedOutcome(
  call: A2aSkillCall,
  refusal: CallRefusal,
  challenge: Challenge | undefined,
  network: string,
): A2aOutcome {
  if (refusal.error || !challenge) {
    const body = appErrorBody(refusal.error!)
    return {
      state: 'failed',
      text: String(body.message),
      metadata: {
        'tollgate.error': body,
        ...(call.payment === undefined
          ? {}
          : {
              [A2A_META.status]: 'payment-failed',
              [A2A_META.error]: String(body.code),
              [A2A_META.receipts]: [failedReceipt(network, `nothing was charged: ${String(body.message)}`)],
            }),
      },
      parts: [{ kind: 'data', data: body }],
    }
  }
  return challengeOutcome(challenge, refusal, network)
}

/** The challenge: `input-required` with the PaymentRequired; a refused payment: `failed`, the challenge again for a new task. */
function challengeOutcome(challenge: Challenge, refusal: CallRefusal, network: string): A2aOutcome {
  const required: PaymentRequiredV2 = {
    x402Version: 2,
    error: refusal.reason ?? 'payment_required',
    resource: challenge.v2.resource,
    accepts: challenge.v2.accepts,
  }
  if (!refusal.reason)
    return {
      state: 'input-required',
      text: `Payment is required: send a PaymentPayload for one of "accepts" in the message metadata "${A2A_META.payload}" with this task's id.`,
      metadata: { [A2A_META.status]: 'payment-required', [A2A_META.required]: required },
      parts: [],
    }
  const message = refusal.message ?? reasons[refusal.reason].message
  return {
    state: 'failed',
    text: `Payment verification failed: ${message}`,
    metadata: {
      [A2A_META.status]: 'payment-failed',
      [A2A_META.error]: refusal.reason,
      [A2A_META.receipts]: [failedReceipt(network, message)],
      // what to pay in a new task
      [A2A_META.required]: required,
    },
    parts: [],
  }
}

/** A seller's agent's own parts, as dispatch kept them. */
function agentParts(bytes: Buffer): A2aPart[] {
  const r = JSON.parse(bytes.toString('utf8')) as { parts?: Array<Record<string, unknown>> }
  return (r.parts ?? []).map((p): A2aPart => {
    if (p.kind === 'file' && typeof p.bytes === 'string')
      return { kind: 'file', bytes: Buffer.from(p.bytes, 'base64'), mediaType: String(p.mediaType ?? '') }
    if (p.kind === 'data') return { kind: 'data', data: p.data }
    return { kind: 'text', text: String(p.text ?? '') }
  })
}

/** An endpoint's answer as parts: a JSON value as data, other text as text, anything else as a file. */
function partsOf(bytes: Buffer, contentType: string | undefined): A2aPart[] {
  const mimeType = (contentType ?? 'application/octet-stream').split(';')[0]!.trim().toLowerCase()
  const text = () => bytes.toString('utf8')
  if (mimeType.includes('json')) {
    try {
      return [{ kind: 'data', data: JSON.parse(text()) }]
    } catch {
      return [{ kind: 'text', text: text() }]
    }
  }
  if (mimeType.startsWith('text/') || /xml|javascript|yaml|csv/.test(mimeType)) return [{ kind: 'text', text: text() }]
  return [{ kind: 'file', bytes, mediaType: mimeType }]
}

function headerValue(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v
}

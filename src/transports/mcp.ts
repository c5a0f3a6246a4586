import type { IncomingHttpHeaders } from 'node:http'
import type { Readable } from 'node:stream'
import type { CallToolResult, ContentBlock } from '@modelcontextprotocol/sdk/types.js'
import type { FastifyBaseLogger } from 'fastify'
import { appErrorBody } from '../error-render.js'
import { appError } from '../errors.js'
import type { CallRefusal, CallRequest, PaymentReceipt, PaymentTransport } from '../seam/types.js'
import type { Challenge } from '../x402/challenge.js'
import { reasons } from '../x402/reasons.js'
import { SIGN_IN_WITH_X, signInDeclaration } from '../x402/sign-in-with-x.js'
import type { PaymentRequiredV2, SettlementResponse } from '../x402/types.js'
import { settlementResponseOf } from './receipt.js'

/** `params._meta` key of the buyer's PaymentPayload (x402 specs/transports-v2/mcp.md) */
export const MCP_PAYMENT_META_KEY = 'x402/payment'
/** result `_meta` key of the settlement response */
export const MCP_PAYMENT_RESPONSE_META_KEY = 'x402/payment-response'
/**
 * `params._meta` key of an x402 `sign-in-with-x` proof: Tollgate's binding (the extension's spec
 * names only the HTTP header). The proof is the JSON object the SIGN-IN-WITH-X header carries
 * base64-encoded; that base64 string is taken too.
 */
export const MCP_SIGN_IN_META_KEY = SIGN_IN_WITH_X

/**
 * The content type of an upstream MCP tool's result as it moves through the paid-call stages (the
 * CallToolResult as JSON): over MCP it is passed on as it is, over HTTP it is the JSON body.
 */
export const MCP_TOOL_RESULT_TYPE = 'application/vnd.tollgate.mcp-tool-result+json'

/** One `tools/call` to a service's MCP server: the tool resolved to its endpoint path, and what came with it. */
export interface McpToolCall {
  /** `/<namespace>/<service>/<tool name>` */
  path: string
  /** the endpoint's methods when the tool exists (the call is made with `toolMethod(methods)`) */
  methods: ReadonlySet<string> | undefined
  /** the endpoint's resource URL (names a binary answer) */
  resourceUrl: string
  arguments: Record<string, unknown> | undefined
  meta: Record<string, unknown> | undefined
  /** the HTTP request that carried the MCP message */
  headers: IncomingHttpHeaders
  log: FastifyBaseLogger
}

/** In: the tool call; out: the same call (to name a binary answer); sent: the tool result the MCP server returns. */
export type McpTransport = PaymentTransport<McpToolCall, McpToolCall, Promise<CallToolResult>>

/** Bytes of an upstream's answer a tool result carries (it is held whole, base64 for binary); past it the answer is refused. */
export const MCP_MAX_ANSWER_BYTES = 16 * 1024 * 1024

/**
 * The method a tool call is made with: POST when the endpoint offers it (arguments as the JSON
 * body), else GET (as the query), else the first it offers.
 */
export function toolMethod(methods: ReadonlySet<string> | undefined): string {
  if (!methods || methods.has('POST')) return 'POST'
  if (methods.has('GET')) return 'GET'
  return methods.values().next().value ?? 'POST'
}

const QUERY_METHODS = new Set(['GET', 'HEAD', 'DELETE'])

// headers of the MCP exchange itself, not of the call: an upstream gets its own
const MCP_HEADERS = new Set([
  'content-type',
  'content-length',
  'accept',
  'mcp-session-id',
  'mcp-protocol-version',
  'last-event-id',
])

/**
 * x402 over MCP (specs/transports-v2/mcp.md): the payment in `params._meta["x402/payment"]` as a
 * v2 PaymentPayload; the challenge (and every payment refusal) as a tool result with `isError`, the
 * v2 PaymentRequired in `structuredContent` and its JSON in `content[0].text`; the receipt in the
 * result's `_meta["x402/payment-response"]`. Any other refusal (bad arguments, unknown tool, the
 * endpoint failed) is a tool result with `isError` and the catalogue error in the same two places.
 *
 * Paid access (x402 `sign-in-with-x`): the challenge declares the extension as the HTTP 402 does,
 * and a call without a payment may carry the proof in `params._meta["sign-in-with-x"]`; its
 * refusals are challenges with the extension's reasons, and a call served on it has no receipt.
 */
export function createMcpTransport(chain: { caip2: string }): McpTransport {
  const receiptOf = (r: PaymentReceipt): SettlementResponse => settlementResponseOf(r, chain.caip2)

  return {
    name: 'mcp',

    request: toolCallRequest,

    async send(call, result): Promise<CallToolResult> {
      if (result.kind === 'refused') {
        const { refusal, challenge } = result
        if (refusal.error || !challenge) return errorResult(appErrorBody(refusal.error!))
        return paymentRequiredResult(challenge, refusal)
      }
      const bytes = await bodyBytes(result.body)
      if (bytes === undefined) {
        // only an upstream streams, and it has answered by now: what was kept stays kept, and the receipt says so
        call.log.warn({ endpoint: call.path }, 'answer too large for an MCP tool result')
        const tooLarge = errorResult(
          appErrorBody(appError('answer_too_large', { limit: MCP_MAX_ANSWER_BYTES, url: call.resourceUrl })),
        )
        return result.receipt
          ? { ...tooLarge, _meta: { [MCP_PAYMENT_RESPONSE_META_KEY]: receiptOf(result.receipt) } }
          : tooLarge
      }
      const contentType = result.contentType ?? headerValue(result.headers?.['content-type'])
      if (contentType === MCP_TOOL_RESULT_TYPE)
        return upstreamToolResult(bytes, result.receipt && receiptOf(result.receipt), result.status)
      const content = contentOf(bytes, contentType, call.resourceUrl)
      if (result.status >= 400) {
        // the endpoint's own failure: its payment was voided (or the signed-in call failed)
        return { isError: true, content: content.content, _meta: { 'tollgate/status': result.status } }
      }
      // no receipt: served on a sign-in, nothing paid
      return {
        content: content.content,
        ...(content.structured ? { structuredContent: content.structured } : {}),
        ...(result.receipt ? { _meta: { [MCP_PAYMENT_RESPONSE_META_KEY]: receiptOf(result.receipt) } } : {}),
      }
    },
  }
}

/** A tool call as the stages see it: the endpoint's method, the arguments as its query or JSON body, the payment and sign-in proof from `_meta`. */
function toolCallRequest(call: McpToolCall): CallRequest {
  const args = call.arguments ?? {}
  const method = toolMethod(call.methods)
  const inQuery = QUERY_METHODS.has(method)
  const query = inQuery ? queryString(args) : ''
  const headers: IncomingHttpHeaders = { accept: '*/*' }
  for (const [k, v] of Object.entries(call.headers)) if (!MCP_HEADERS.has(k)) headers[k] = v
  if (!inQuery) headers['content-type'] = 'application/json'
  const meta = call.meta
  return {
    path: call.path,
    method,
    // present as soon as the key is (null or a string included): the decoder names what is wrong with it
    payment: meta && Object.hasOwn(meta, MCP_PAYMENT_META_KEY) ? { mcpPayment: meta[MCP_PAYMENT_META_KEY] } : undefined,
    signIn: meta && Object.hasOwn(meta, MCP_SIGN_IN_META_KEY) ? signInProof(meta[MCP_SIGN_IN_META_KEY]) : undefined,
    input: { ...args },
    query: {},
    // what an upstream endpoint receives; a hosted handler takes `input`
    body: inQuery ? undefined : Buffer.from(JSON.stringify(args)),
    headers,
    url: query ? `${call.path}?${query}` : call.path,
    log: call.log,
  }
}

/** A seller's MCP tool's own result, with the receipt when its payment was kept (none on a sign-in); a failure is isError. */
function upstreamToolResult(bytes: Buffer, receipt: SettlementResponse | undefined, status: number): CallToolResult {
  const r = JSON.parse(bytes.toString('utf8')) as CallToolResult
  const own = { content: r.content ?? [], ...(r.structuredContent ? { structuredContent: r.structuredContent } : {}) }
  if (status >= 400) return { ...own, isError: true, _meta: { ...r._meta, 'tollgate/status': status } }
  return { ...own, _meta: { ...r._meta, ...(receipt ? { [MCP_PAYMENT_RESPONSE_META_KEY]: receipt } : {}) } }
}

/** The challenge as the spec has it: PaymentRequired in `structuredContent` and as JSON in `content[0].text`. */
function paymentRequiredResult(challenge: Challenge, refusal: CallRefusal): CallToolResult {
  const reason = refusal.reason ?? 'payment_required'
  const required: PaymentRequiredV2 = {
    x402Version: 2,
    error: reason,
    resource: challenge.v2.resource,
    accepts: challenge.v2.accepts,
    // paid access: a fresh sign-in challenge (nonce) each time, as in the HTTP 402's header
    ...(challenge.signIn ? { extensions: { [SIGN_IN_WITH_X]: signInDeclaration(challenge.signIn) } } : {}),
  }
  const message = refusal.reason
    ? (refusal.message ?? reasons[refusal.reason].message)
    : `payment required: send a PaymentPayload for one of "accepts" in params._meta["${MCP_PAYMENT_META_KEY}"]${
        challenge.signIn
          ? `, or, having paid here with the same wallet, a sign-in-with-x proof in params._meta["${MCP_SIGN_IN_META_KEY}"]`
          : ''
      }`
  return {
    isError: true,
    structuredContent: required as unknown as Record<string, unknown>,
    // content[0] is the machine's (the spec's); the second says the same for a reader
    content: [
      { type: 'text', text: JSON.stringify(required) },
      { type: 'text', text: message },
    ],
  }
}

/** A sign-in proof as the header carries it: a base64 string as it is, anything else as base64 of its JSON (the decoder names what is wrong). */
function signInProof(v: unknown): string {
  if (typeof v === 'string') return v
  return Buffer.from(JSON.stringify(v) ?? 'null').toString('base64')
}

function errorResult(body: Record<string, unknown>): CallToolResult {
  return { isError: true, structuredContent: body, content: [{ type: 'text', text: JSON.stringify(body) }] }
}

/** A tool's arguments as the query of a GET upstream: scalars as they are, objects and arrays as JSON. */
export function queryString(args: Record<string, unknown>): string {
  const q = new URLSearchParams()
  for (const [k, v] of Object.entries(args)) {
    if (v === undefined || v === null) continue
    q.append(k, typeof v === 'object' ? JSON.stringify(v) : String(v))
  }
  return q.toString()
}

function headerValue(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v
}

/** The answer's bytes; undefined when a streamed (upstream) answer passes MCP_MAX_ANSWER_BYTES, which is then dropped. */
export async function bodyBytes(body: Buffer | string | Readable): Promise<Buffer | undefined> {
  if (typeof body === 'string') return Buffer.from(body)
  if (Buffer.isBuffer(body)) return body
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of body) {
    const b = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string)
    size += b.length
    if (size > MCP_MAX_ANSWER_BYTES) {
      body.destroy()
      return undefined
    }
    chunks.push(b)
  }
  return Buffer.concat(chunks)
}

/**
 * An endpoint's answer as MCP content: JSON as text (and an object also as `structuredContent`),
 * other text as text, images and audio as such, anything else (a PDF) as an embedded resource.
 */
export function contentOf(
  bytes: Buffer,
  contentType: string | undefined,
  resourceUrl: string,
): { content: ContentBlock[]; structured?: Record<string, unknown> } {
  const mimeType = (contentType ?? 'application/octet-stream').split(';')[0]!.trim().toLowerCase()
  if (mimeType.startsWith('image/')) return { content: [{ type: 'image', data: bytes.toString('base64'), mimeType }] }
  if (mimeType.startsWith('audio/')) return { content: [{ type: 'audio', data: bytes.toString('base64'), mimeType }] }
  const text = bytes.toString('utf8')
  if (mimeType.includes('json')) {
    let structured: Record<string, unknown> | undefined
    try {
      const parsed: unknown = JSON.parse(text)
      if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed))
        structured = parsed as Record<string, unknown>
    } catch {
      // sent as text all the same
    }
    return { content: [{ type: 'text', text }], structured }
  }
  if (mimeType.startsWith('text/') || /xml|javascript|yaml|csv/.test(mimeType))
    return { content: [{ type: 'text', text }] }
  return { content: [{ type: 'resource', resource: { uri: resourceUrl, mimeType, blob: bytes.toString('base64') } }] }
}

import { createHmac } from 'node:crypto'
import { defineHandler, HandlerInputError, HandlerUpstreamError } from '../../src/pool/handler-contract.js'
import { fetchPublicUrl } from '../_shared/outbound.js'

const MAX_BODY_BYTES = 64 * 1024
const MAX_RESPONSE_BYTES = 64 * 1024
const EXCERPT_CHARS = 2_048
const DEFAULT_SIGNATURE_HEADER = 'X-Signature-256'
/** Headers the HTTP client sets itself or that would change the connection; the buyer may not set them. */
const RESERVED_HEADERS = new Set([
  'host',
  'content-length',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'upgrade',
  'te',
  'trailer',
  'proxy-connection',
  'expect',
])

interface Input {
  url: string
  method?: 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'GET'
  headers?: Record<string, string>
  json?: Record<string, unknown>
  text?: string
  contentType?: string
  secret?: string
  signatureHeader?: string
  timeoutMs?: number
}

export default defineHandler<Input>({
  slug: 'webhook-tester',
  // requests to third-party URLs come from the platform's addresses: a ceiling for the whole platform
  rateLimit: { requests: 300, perSeconds: 60 },
  description:
    'Send one test request (JSON or text body up to 64 KB, custom headers, optional HMAC-SHA256 signature) to your webhook URL and see the status, headers, timing and the start of the answer. Redirects are reported, not followed.',
  network: true,
  timeoutMs: 15_000,
  inputSchema: {
    type: 'object',
    required: ['url'],
    additionalProperties: false,
    properties: {
      url: {
        type: 'string',
        minLength: 1,
        maxLength: 2048,
        description: 'The webhook endpoint, an absolute http or https URL on a public host.',
      },
      method: {
        type: 'string',
        enum: ['POST', 'PUT', 'PATCH', 'DELETE', 'GET'],
        default: 'POST',
        description: 'HTTP method (default POST).',
      },
      headers: {
        type: 'object',
        maxProperties: 20,
        propertyNames: { pattern: "^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,64}$" },
        additionalProperties: { type: 'string', maxLength: 1024 },
        description:
          'Extra request headers (at most 20; values up to 1024 characters). Host, Content-Length, Connection and other hop-by-hop headers are refused.',
      },
      json: {
        type: 'object',
        description:
          'A JSON object to send as the body (Content-Type: application/json). Give json or text, not both; at most 64 KB serialised.',
      },
      text: {
        type: 'string',
        maxLength: MAX_BODY_BYTES,
        description:
          'A text body, sent as is (Content-Type from contentType, default text/plain; charset=utf-8); at most 64 KB.',
      },
      contentType: {
        type: 'string',
        maxLength: 200,
        description:
          'Content-Type of the body (default application/json for json, text/plain; charset=utf-8 for text).',
      },
      secret: {
        type: 'string',
        minLength: 1,
        maxLength: 256,
        description:
          'When given, the request carries an HMAC-SHA256 signature of the exact body bytes keyed with this secret, as "sha256=<hex>" in signatureHeader (the GitHub webhook format).',
      },
      signatureHeader: {
        type: 'string',
        pattern: "^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,64}$",
        default: DEFAULT_SIGNATURE_HEADER,
        description: `Header that carries the signature (default ${DEFAULT_SIGNATURE_HEADER}, e.g. X-Hub-Signature-256 for GitHub-style receivers).`,
      },
      timeoutMs: {
        type: 'integer',
        minimum: 1000,
        maximum: 10000,
        default: 10000,
        description: 'How long to wait for the answer, 1000-10000 ms (default 10000).',
      },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      'success (true for a 2xx answer), request { method, url, headers (as sent), bodyBytes, signature { header, format, value } or null }, response { status, headers, contentType, bodyExcerpt (first 2048 characters, UTF-8), bodyBytes (read, at most 65536), truncated } or null when there was no answer, redirect { status, location } when the endpoint answered 3xx (not followed), error (why there was no answer: connection refused, TLS failure, timeout) or null, timing { totalMs }.',
    schema: {
      type: 'object',
      properties: {
        success: { type: 'boolean' },
        request: { type: 'object' },
        response: { type: ['object', 'null'] },
        redirect: { type: ['object', 'null'] },
        error: { type: ['string', 'null'] },
        timing: { type: 'object' },
      },
    },
    example: {
      success: true,
      request: {
        method: 'POST',
        url: 'https://example.com/webhook',
        headers: { 'content-type': 'application/json' },
        bodyBytes: 28,
        signature: null,
      },
      response: {
        status: 200,
        headers: { 'content-type': 'application/json', date: 'Sat, 28 Nov 2026 12:50:23 GMT', 'content-length': '15' },
        contentType: 'application/json',
        bodyExcerpt: '{"received":true}',
        bodyBytes: 17,
        truncated: false,
      },
      redirect: null,
      error: null,
      timing: { totalMs: 184 },
    },
  },
  example: { url: 'https://example.com/webhook', method: 'POST', json: { event: 'test.ping', id: 1 } },
  // it acts outside (mail sent, a link created, a request sent): recorded before it runs
  effects: true,
  async run(input, ctx) {
    if (input.json !== undefined && input.text !== undefined)
      throw new HandlerInputError('text', 'give json or text as the body, not both')
    const method = input.method ?? 'POST'
    const signatureHeader = input.signatureHeader ?? DEFAULT_SIGNATURE_HEADER
    if (method === 'GET' && (input.json !== undefined || input.text !== undefined))
      throw new HandlerInputError('method', 'a GET request carries no body; use POST, PUT or PATCH')
    const body = input.json !== undefined ? JSON.stringify(input.json) : input.text
    const bodyBytes = body === undefined ? 0 : Buffer.byteLength(body)
    if (bodyBytes > MAX_BODY_BYTES)
      throw new HandlerInputError(
        input.json !== undefined ? 'json' : 'text',
        `the body is ${bodyBytes} bytes; at most ${MAX_BODY_BYTES} are sent`,
        413,
      )

    const headers: Record<string, string> = {}
    for (const [name, value] of Object.entries(input.headers ?? {})) {
      if (RESERVED_HEADERS.has(name.toLowerCase()))
        throw new HandlerInputError(
          `headers.${name}`,
          `the ${name} header is set by the HTTP client and cannot be given`,
        )
      if (/[\r\n\0]/.test(value))
        throw new HandlerInputError(`headers.${name}`, 'header values may not contain line breaks')
      headers[name.toLowerCase()] = value
    }
    if (body !== undefined)
      headers['content-type'] =
        input.contentType ??
        headers['content-type'] ??
        (input.json !== undefined ? 'application/json' : 'text/plain; charset=utf-8')
    let signature: { header: string; format: string; value: string } | null = null
    if (input.secret !== undefined) {
      const value = `sha256=${createHmac('sha256', input.secret)
        .update(body ?? '')
        .digest('hex')}`
      signature = {
        header: signatureHeader,
        format: 'sha256=<lower-case hex HMAC-SHA256 of the exact request body bytes, keyed with the secret (UTF-8)>',
        value,
      }
      headers[signatureHeader.toLowerCase()] = value
    }

    const request = { method, url: input.url, headers, bodyBytes, signature }
    const started = Date.now()
    let res
    try {
      // the outbound helper types GET/HEAD/POST; undici passes any method through unchanged
      res = await fetchPublicUrl(input.url, ctx, {
        field: 'url',
        method: method as 'POST',
        headers,
        body,
        maxRedirects: 0,
        maxBytes: MAX_RESPONSE_BYTES,
        timeoutMs: input.timeoutMs ?? 10_000,
      })
    } catch (err) {
      if (!(err instanceof HandlerUpstreamError)) throw err
      // the endpoint not answering is the finding a webhook test exists to show
      return {
        body: {
          success: false,
          request,
          response: null,
          redirect: null,
          error: err.message,
          timing: { totalMs: Date.now() - started },
        },
      }
    }
    const location = res.headers.location
    const contentType = res.headers['content-type']
    return {
      body: {
        success: res.status >= 200 && res.status < 300,
        request,
        response: {
          status: res.status,
          headers: res.headers,
          contentType: typeof contentType === 'string' ? contentType : null,
          bodyExcerpt: res.body.toString('utf8').slice(0, EXCERPT_CHARS),
          bodyBytes: res.body.length,
          truncated: res.truncated,
        },
        redirect:
          res.status >= 300 && res.status < 400
            ? { status: res.status, location: typeof location === 'string' ? location : null }
            : null,
        error: null,
        timing: { totalMs: res.elapsedMs },
      },
    }
  },
})

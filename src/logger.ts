import type { FastifyRequest, FastifyServerOptions } from 'fastify'
import { pino, stdSerializers, type DestinationStream, type Logger } from 'pino'

/** Paths pino blanks out: credentials, payment headers and anything key-like. */
export const redactPaths = [
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["x-payment"]',
  'req.headers["payment-signature"]',
  'req.headers["x-api-key"]',
  'res.headers["set-cookie"]',
  'headers.authorization',
  'headers.cookie',
  'headers["x-payment"]',
  'headers["payment-signature"]',
  'headers["x-api-key"]',
  '*.headers.authorization',
  '*.headers.cookie',
  '*.headers["x-payment"]',
  '*.headers["payment-signature"]',
  '*.headers["x-api-key"]',
  // upstream settings: forwarded header values and the signing secret
  '*.forward_headers',
  '*.signingSecret',
  '*.signing_secret',
  '*.privateKey',
  '*.secret',
  '*.password',
  '*.apiKey',
  '*.agentKey',
  '*.masterKey',
]

/** A URL's path, or anything after a path's `?`, blanked: query strings carry secrets (`?password=`, `?secret=`). */
const QUERY = /(\/[^\s?"'`]*)\?[^\s"'`]+/g
export function withoutQuery(text: string): string {
  return text.replace(QUERY, '$1?[redacted]')
}

/**
 * The request as logged: Fastify's fields, with the path only. Every hosted endpoint takes its
 * input as a GET query too, so the query string would put passwords and tokens in the log.
 */
function requestSerializer(req: FastifyRequest) {
  const url = req.url ?? ''
  const q = url.indexOf('?')
  return {
    method: req.method,
    url: q < 0 ? url : url.slice(0, q),
    version: req.headers?.['accept-version'] as string | undefined,
    host: req.host,
    remoteAddress: req.ip,
    remotePort: req.socket?.remotePort,
  }
}

/** An absolute URL: scheme, optional userinfo, host, then whatever follows up to a space or quote. */
const ABSOLUTE_URL = /\b([a-z][a-z0-9+.-]*:\/\/)(?:[^\s/@"']*@)?([^\s/?#"']+)[^\s"']*/gi

/** Absolute URLs cut to scheme and host, and any other path's query blanked: RPC URLs hold an API key in the path or the query. */
function withoutUrlSecrets(text: string): string {
  return withoutQuery(text.replace(ABSOLUTE_URL, '$1$2/…'))
}

/** Every string in a serialized error, URL secrets removed; copies, never changes, what the error object holds. */
function scrubbed(v: unknown, depth: number): unknown {
  if (typeof v === 'string') return withoutUrlSecrets(v)
  if (depth > 4 || v === null || typeof v !== 'object') return v
  if (Array.isArray(v)) return v.map((x) => scrubbed(x, depth + 1))
  // a value that renders itself (Date, Buffer) stays; plain objects and nested serialized errors are walked
  if (ArrayBuffer.isView(v) || typeof (v as { toJSON?: unknown }).toJSON === 'function') return v
  return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, scrubbed(x, depth + 1)]))
}

/**
 * pino's error serializer with URL secrets removed from every field: viem's errors repeat the RPC
 * URL in their message, stack, `url` and `metaMessages`. An error logged as its message alone
 * (`{ err: err.message }`) is cleaned the same way.
 */
function errorSerializer(err: Error): SerializedError {
  // pino hands the serializer whatever is logged under `err`, a bare message included
  const e: unknown = err
  if (typeof e === 'string') return withoutUrlSecrets(e) as unknown as SerializedError
  if (e === null || typeof e !== 'object') return e as SerializedError
  return scrubbed({ ...stdSerializers.err(err) }, 0) as SerializedError
}
type SerializedError = { type: string; message: string; stack: string; [key: string]: unknown }

export const serializers = { req: requestSerializer, err: errorSerializer }

/** Logger options shared by every Fastify app and standalone process. */
export function loggerOptions(level: string): FastifyServerOptions['logger'] {
  return { level, redact: { paths: redactPaths, censor: '[redacted]' }, serializers }
}

/** The logger of a process without a Fastify app (the worker), with the same redaction. */
export function processLogger(level: string, stream?: DestinationStream): Logger {
  return pino(
    { level, redact: { paths: redactPaths, censor: '[redacted]' }, serializers: { err: errorSerializer } },
    stream,
  )
}

/**
 * An error in one line fit for a log: viem's short message and the node's answer, never its
 * request body (a signed transaction) nor a URL's path or query (RPC URLs often hold an API key).
 */
export function errorSummary(err: unknown): string {
  const e = err as { shortMessage?: unknown; details?: unknown; message?: unknown }
  const short = typeof e?.shortMessage === 'string' ? e.shortMessage : undefined
  const details = typeof e?.details === 'string' && e.details !== short ? e.details : undefined
  const text = short ? (details ? `${short} ${details}` : short) : String(e?.message ?? err).split('\n')[0]!
  return text.replace(ABSOLUTE_URL, '$1$2/…').slice(0, 300)
}

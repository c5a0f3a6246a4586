import { createHash, createHmac } from 'node:crypto'
import type { IncomingHttpHeaders } from 'node:http'
import { isIP } from 'node:net'
import { Agent, fetch as undiciFetch, request, type Dispatcher } from 'undici'
import { guardedLookup, isPrivateAddress } from '../net/ssrf-guard.js'

/** Upstream options stored on an endpoint (upstream_config). Secret values arrive already decrypted. */

/** The forwarding time limit of an endpoint whose settings give none. */
export const FORWARD_TIMEOUT_MS = 30_000

export interface UpstreamOptions {
  timeoutMs?: number
  /** headers added to every forwarded request, e.g. the seller's own API key */
  headers?: Record<string, string>
  /** when set, each forwarded request carries an HMAC the upstream can verify */
  signingSecret?: string
  /** request headers the buyer must send (checked before any payment work) */
  requiredHeaders?: string[]
  /** the seller's limit for this endpoint, across every proxy process */
  rateLimit?: { requests: number; perSeconds: number }
  /** settings are stored but this proxy cannot decrypt them (no master key): paid calls are refused */
  unreadable?: true
}

// Never forwarded: hop-by-hop headers, our payment headers and the buyer's credentials for us.
const DROP = new Set([
  'host',
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'upgrade',
  'te',
  'trailer',
  'content-length',
  'x-payment',
  'payment-signature',
  'sign-in-with-x',
  'authorization',
  'cookie',
  'x-forwarded-for',
  'x-forwarded-host',
  'x-forwarded-proto',
])
const DROP_RESPONSE = new Set([
  'connection',
  'keep-alive',
  'transfer-encoding',
  'content-length',
  'set-cookie',
  'payment-response',
  'x-payment-response',
])

export interface UpstreamResponse {
  status: number
  headers: Record<string, string | string[]>
  body: Dispatcher.ResponseData['body']
}

/**
 * Signs a forwarded request: `X-Tollgate-Signature: t=<unix>,v1=<hex hmac-sha256>` over
 * `<unix>.<METHOD>.<path and query>.<sha256 hex of body>`.
 */
export function signUpstreamRequest(
  secret: string,
  method: string,
  pathAndQuery: string,
  body: Uint8Array | undefined,
  now = Math.floor(Date.now() / 1000),
): string {
  const bodyHash = createHash('sha256')
    .update(body ?? new Uint8Array())
    .digest('hex')
  const mac = createHmac('sha256', secret).update(`${now}.${method}.${pathAndQuery}.${bodyHash}`).digest('hex')
  return `t=${now},v1=${mac}`
}

/**
 * One request to a seller's JSON-RPC server (an upstream MCP server or A2A agent) as web fetch,
 * for the official SDKs' clients: refused for a private address literal unless `allowPrivate` (host
 * names go through the SSRF-guarded lookup of `agent`), with the seller's forwarded headers, the
 * call's `X-Tollgate-Payment-Id` when it has one, and an `X-Tollgate-Signature` over the method,
 * path and body as a forwarded HTTP request is signed.
 */
export function sellerFetch(
  agent: Agent,
  allowPrivate: boolean,
  options: UpstreamOptions,
  paymentId: string | undefined,
  input: string | URL | Request,
  init: RequestInit | undefined,
  extra: { signal?: AbortSignal } = {},
): Promise<Response> {
  const method = (init?.method ?? 'GET').toUpperCase()
  const url = new URL(input instanceof Request ? input.url : input)
  const host = url.hostname.replace(/^\[|\]$/g, '')
  if (!allowPrivate && isIP(host) && isPrivateAddress(host))
    return Promise.reject(Object.assign(new Error(`refused: ${host} is a private address`), { code: 'ESSRF' }))
  const body = typeof init?.body === 'string' ? Buffer.from(init.body) : undefined
  const headers = new Headers(init?.headers)
  for (const [k, v] of Object.entries(options.headers ?? {})) headers.set(k, v)
  if (paymentId) headers.set('x-tollgate-payment-id', paymentId)
  if (options.signingSecret)
    headers.set(
      'x-tollgate-signature',
      signUpstreamRequest(options.signingSecret, method, url.pathname + url.search, body),
    )
  return undiciFetch(url, {
    ...(init as object),
    headers: Object.fromEntries(headers.entries()),
    dispatcher: agent,
    ...extra,
  } as never) as unknown as Promise<Response>
}

/** Forwards a paid request to the seller's origin with undici and streams the answer back. */
export function createUpstreamClient(opts: { connections?: number; allowPrivate?: boolean } = {}) {
  const allowPrivate = opts.allowPrivate ?? false
  // host names are resolved through a lookup that refuses private addresses (also on re-resolution)
  const agent = new Agent({
    connections: opts.connections ?? 128,
    keepAliveTimeout: 10_000,
    pipelining: 1,
    connect: { lookup: guardedLookup(allowPrivate) },
  })
  return {
    async forward(p: {
      origin: string
      /** the path after the endpoint's own path, plus query string */
      subPath: string
      method: string
      headers: IncomingHttpHeaders
      body: Buffer | undefined
      options: UpstreamOptions
      paymentId: string
    }): Promise<UpstreamResponse> {
      const target = new URL(p.origin)
      const host = target.hostname.replace(/^\[|\]$/g, '')
      if (!allowPrivate && isIP(host) && isPrivateAddress(host))
        throw Object.assign(new Error(`refused: ${host} is a private address`), { code: 'ESSRF' })
      const [extraPath, query] = splitQuery(p.subPath)
      const basePath = target.pathname.replace(/\/+$/, '')
      const path = `${basePath}${extraPath}` || '/'
      const search = [target.search.replace(/^\?/, ''), query].filter(Boolean).join('&')
      const pathAndQuery = search ? `${path}?${search}` : path
      const headers: Record<string, string> = {}
      for (const [k, v] of Object.entries(p.headers)) {
        if (v === undefined || DROP.has(k)) continue
        headers[k] = Array.isArray(v) ? v.join(', ') : v
      }
      Object.assign(headers, p.options.headers ?? {})
      headers['x-tollgate-payment-id'] = p.paymentId
      if (p.options.signingSecret)
        headers['x-tollgate-signature'] = signUpstreamRequest(p.options.signingSecret, p.method, pathAndQuery, p.body)
      const timeout = p.options.timeoutMs ?? FORWARD_TIMEOUT_MS
      const res = await request(`${target.origin}${pathAndQuery}`, {
        method: p.method as Dispatcher.HttpMethod,
        headers,
        body: p.body && p.body.length > 0 ? p.body : undefined,
        dispatcher: agent,
        headersTimeout: timeout,
        bodyTimeout: timeout,
      })
      const out: Record<string, string | string[]> = {}
      for (const [k, v] of Object.entries(res.headers)) if (v !== undefined && !DROP_RESPONSE.has(k)) out[k] = v
      return { status: res.statusCode, headers: out, body: res.body }
    },
    close: () => agent.close(),
  }
}

function splitQuery(s: string): [string, string] {
  const i = s.indexOf('?')
  return i < 0 ? [s, ''] : [s.slice(0, i), s.slice(i + 1)]
}

export type UpstreamClient = ReturnType<typeof createUpstreamClient>

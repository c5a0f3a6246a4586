/**
 * Outbound calls of hosted handlers, in one place so every handler gets the same guarantees:
 *
 * - **Providers** (services the operator configures: base URLs, API keys, through
 *   `ctx.providers`): `providerSetting` answers 503 `upstream_not_configured` when a setting is
 *   missing; `callProvider` bounds time and size and turns failures into 502 `upstream_failed`
 *   (never invented data, never the provider's key in a message).
 * - **Public targets the buyer names** (a URL to scrape, a host to check): `fetchPublicUrl`,
 *   `resolvePublicHost` and `connectPublic` refuse loopback, private, link-local and other
 *   internal addresses (checked on the resolved address, and again on every redirect) unless
 *   `ctx.allowPrivateNetwork` is set, which only tests do.
 * - **DNS**: `dnsResolver(ctx)` uses `DNS_SERVERS` (comma-separated `ip[:port]`) when set, else
 *   the system's resolvers.
 *
 * @example
 *   const key = providerSetting(ctx, 'BRAVE_SEARCH_API_KEY', 'web search')
 *   const r = await callProvider('Brave Search', `${base}/res/v1/web/search?q=...`, { headers: { 'x-subscription-token': key } })
 *   const page = await fetchPublicUrl(input.url, ctx, { field: 'url' })
 */
import { promises as dnsPromises } from 'node:dns'
import { isIP, connect as netConnect, type Socket } from 'node:net'
import { connect as tlsConnect, type TLSSocket, type ConnectionOptions } from 'node:tls'
import { Agent, request, type Dispatcher } from 'undici'
import { isPrivateAddress, guardedLookup } from '../../src/net/ssrf-guard.js'
import { HandlerInputError, HandlerUpstreamError, type HandlerContext } from '../../src/pool/handler-contract.js'
import { taskSignal, withTaskSignal } from '../../src/pool/task-signal.js'

const DEFAULT_TIMEOUT_MS = 10_000
const DEFAULT_MAX_BYTES = 5 * 1024 * 1024

/** A configured provider setting, or 503 upstream_not_configured naming the variable (never its value). */
export function providerSetting(ctx: HandlerContext, name: string, what = 'this endpoint'): string {
  const v = ctx.providers[name]
  if (v === undefined || v.trim() === '')
    throw new HandlerUpstreamError(
      'upstream_not_configured',
      `${what} needs ${name}, which this deployment has not set`,
    )
  return v.trim()
}

/** The setting when present, else undefined (optional provider settings). */
export function optionalSetting(ctx: HandlerContext, name: string): string | undefined {
  const v = ctx.providers[name]
  return v === undefined || v.trim() === '' ? undefined : v.trim()
}

export interface ProviderResponse {
  status: number
  headers: Record<string, string | string[] | undefined>
  text: string
  /** the parsed body when it is JSON, else undefined */
  json: unknown
}

export interface ProviderCallOptions {
  method?: 'GET' | 'POST' | 'PUT' | 'DELETE'
  headers?: Record<string, string>
  /** a string is sent as is; anything else as JSON */
  body?: unknown
  timeoutMs?: number
  maxBytes?: number
  /** statuses returned to the caller instead of failing (e.g. [404] for "not found" answers) */
  acceptStatus?: number[]
}

/**
 * One HTTP call to a configured provider. Any status outside 2xx (and `acceptStatus`), a timeout,
 * a connection failure or an oversize body becomes 502 upstream_failed naming the provider.
 */
export async function callProvider(
  provider: string,
  url: string,
  opts: ProviderCallOptions = {},
): Promise<ProviderResponse> {
  const headers: Record<string, string> = { accept: 'application/json', ...opts.headers }
  let body: string | undefined
  if (opts.body !== undefined) {
    body = typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body)
    if (typeof opts.body !== 'string' && !Object.keys(headers).some((h) => h.toLowerCase() === 'content-type'))
      headers['content-type'] = 'application/json'
  }
  let res: Dispatcher.ResponseData
  try {
    res = await request(url, {
      method: opts.method ?? (body === undefined ? 'GET' : 'POST'),
      headers,
      body,
      headersTimeout: opts.timeoutMs ?? DEFAULT_TIMEOUT_MS,
      bodyTimeout: opts.timeoutMs ?? DEFAULT_TIMEOUT_MS,
      signal: withTaskSignal(AbortSignal.timeout(opts.timeoutMs ?? DEFAULT_TIMEOUT_MS)),
    })
  } catch (err) {
    throw new HandlerUpstreamError('upstream_failed', `${provider} could not be reached (${errorCode(err)})`)
  }
  const buf = await readCapped(res.body, opts.maxBytes ?? DEFAULT_MAX_BYTES).catch((err) => {
    throw new HandlerUpstreamError('upstream_failed', `${provider}: ${(err as Error).message}`)
  })
  const text = buf.toString('utf8')
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    json = undefined
  }
  const ok = (res.statusCode >= 200 && res.statusCode < 300) || (opts.acceptStatus ?? []).includes(res.statusCode)
  if (!ok) throw new HandlerUpstreamError('upstream_failed', `${provider} answered HTTP ${res.statusCode}`)
  return { status: res.statusCode, headers: res.headers, text, json }
}

/** callProvider, requiring a JSON body. */
export async function providerJson<T = unknown>(
  provider: string,
  url: string,
  opts: ProviderCallOptions = {},
): Promise<T> {
  const r = await callProvider(provider, url, opts)
  if (r.json === undefined)
    throw new HandlerUpstreamError('upstream_failed', `${provider} answered something that is not JSON`)
  return r.json as T
}

/** Joins a configured base URL and a path (the base may or may not end with '/'). */
export function joinUrl(
  base: string,
  path: string,
  query?: Record<string, string | number | boolean | undefined>,
): string {
  const u = new URL(path.replace(/^\//, ''), base.endsWith('/') ? base : `${base}/`)
  for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined) u.searchParams.set(k, String(v))
  return u.toString()
}

// ---------------------------------------------------------------------------------------------
// Public targets named by the buyer

/** Parses a buyer-supplied http(s) URL; 400 on `field` for anything else (credentials included). */
export function parsePublicUrl(raw: string, field: string): URL {
  let u: URL
  try {
    u = new URL(raw.trim())
  } catch {
    throw new HandlerInputError(field, `${field} must be an absolute http or https URL`)
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:')
    throw new HandlerInputError(field, `${field} must use http or https`)
  if (u.username || u.password) throw new HandlerInputError(field, `${field} must not carry credentials`)
  return u
}

/** Host names that never leave the machine, whatever DNS says. */
const isLocalName = (host: string) =>
  host === 'localhost' || host.endsWith('.localhost') || host.endsWith('.internal') || host === ''

/**
 * Resolves a buyer-named host to its addresses, refusing (400 on `field`) any that is internal
 * unless ctx.allowPrivateNetwork. A host that does not resolve is 422 on `field`.
 */
export async function resolvePublicHost(
  host: string,
  ctx: HandlerContext,
  field: string,
): Promise<Array<{ address: string; family: 4 | 6 }>> {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase()
  if (!ctx.allowPrivateNetwork && isLocalName(h))
    throw new HandlerInputError(field, `${field}: local host names are refused`)
  let list: Array<{ address: string; family: 4 | 6 }>
  if (isIP(h)) list = [{ address: h, family: isIP(h) as 4 | 6 }]
  else {
    try {
      list = (await dnsPromises.lookup(h, { all: true, verbatim: true })) as Array<{ address: string; family: 4 | 6 }>
    } catch (err) {
      const code = errorCode(err)
      if (code === 'ENOTFOUND' || code === 'ENODATA')
        throw new HandlerInputError(field, `${field}: ${h} does not resolve`, 422)
      throw new HandlerUpstreamError('upstream_failed', `could not resolve ${h} (${code})`)
    }
  }
  if (list.length === 0) throw new HandlerInputError(field, `${field}: ${h} does not resolve`, 422)
  if (!ctx.allowPrivateNetwork && list.some((a) => isPrivateAddress(a.address))) {
    throw new HandlerInputError(
      field,
      `${field}: ${h} is a private, loopback or link-local address; only public hosts can be checked`,
    )
  }
  return list
}

export interface PublicFetchOptions {
  field: string
  method?: 'GET' | 'HEAD' | 'POST'
  headers?: Record<string, string>
  body?: string
  timeoutMs?: number
  maxBytes?: number
  /** default 5; 0 returns the first answer, redirects included */
  maxRedirects?: number
}

export interface PublicFetchResult {
  url: string
  finalUrl: string
  status: number
  headers: Record<string, string | string[] | undefined>
  body: Buffer
  /** the URLs redirected from, in order */
  redirects: Array<{ url: string; status: number }>
  /** true when the body was cut at maxBytes */
  truncated: boolean
  elapsedMs: number
}

const agents = new Map<boolean, Agent>()
function agentFor(allowPrivate: boolean): Agent {
  let a = agents.get(allowPrivate)
  if (!a) {
    a = new Agent({
      connections: 32,
      keepAliveTimeout: 5_000,
      connect: { lookup: guardedLookup(allowPrivate), rejectUnauthorized: true },
    })
    agents.set(allowPrivate, a)
  }
  return a
}

/**
 * Fetches a URL the buyer named, following redirects itself so that every hop is checked against
 * internal addresses (a literal address in the URL and the resolved address alike). The body is
 * read up to maxBytes (then `truncated`). A host name of the buyer's that does not resolve is 422
 * on `field`; unreachable hosts, TLS failures and timeouts are 502 upstream_failed; a refused
 * target is 400 on `field`.
 */
export async function fetchPublicUrl(
  raw: string,
  ctx: HandlerContext,
  opts: PublicFetchOptions,
): Promise<PublicFetchResult> {
  const started = Date.now()
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS
  const maxBytes = opts.maxBytes ?? DEFAULT_MAX_BYTES
  const maxRedirects = opts.maxRedirects ?? 5
  const signal = withTaskSignal(AbortSignal.timeout(timeoutMs))
  const first = parsePublicUrl(raw, opts.field)
  const redirects: PublicFetchResult['redirects'] = []
  let url = first
  for (;;) {
    const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase()
    if (!ctx.allowPrivateNetwork && (isLocalName(host) || (isIP(host) && isPrivateAddress(host)))) {
      throw new HandlerInputError(
        opts.field,
        `${opts.field}: ${redirects.length ? 'a redirect leads to ' : ''}a private, loopback or link-local address; only public URLs can be fetched`,
      )
    }
    let res: Dispatcher.ResponseData
    try {
      res = await request(url, {
        method: opts.method ?? 'GET',
        headers: { 'user-agent': 'TollgateBot/1.0 (+hosted endpoint)', accept: '*/*', ...opts.headers },
        body: opts.body,
        dispatcher: agentFor(ctx.allowPrivateNetwork),
        signal,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
      })
    } catch (err) {
      const code = errorCode(err)
      if (code === 'ESSRF')
        throw new HandlerInputError(
          opts.field,
          `${opts.field}: ${host} resolves to a private, loopback or link-local address; only public URLs can be fetched`,
        )
      // the buyer's own host name does not exist: their input, as resolvePublicHost says (a redirect
      // to a name that does not resolve is the site's fault: 502)
      if ((code === 'ENOTFOUND' || code === 'ENODATA') && redirects.length === 0)
        throw new HandlerInputError(opts.field, `${opts.field}: ${host} does not resolve`, 422)
      throw new HandlerUpstreamError('upstream_failed', `${host} could not be fetched (${code})`)
    }
    const location = res.headers.location
    if (
      res.statusCode >= 300 &&
      res.statusCode < 400 &&
      typeof location === 'string' &&
      redirects.length < maxRedirects
    ) {
      await res.body.dump().catch(() => undefined)
      redirects.push({ url: url.toString(), status: res.statusCode })
      try {
        url = parsePublicUrl(new URL(location, url).toString(), opts.field)
      } catch {
        throw new HandlerUpstreamError('upstream_failed', `${host} redirected to an invalid location`)
      }
      continue
    }
    let body: Buffer
    let truncated = false
    try {
      ;({ body, truncated } = await readUpTo(res.body, maxBytes))
    } catch (err) {
      throw new HandlerUpstreamError('upstream_failed', `${host}: the body could not be read (${errorCode(err)})`)
    }
    return {
      url: first.toString(),
      finalUrl: url.toString(),
      status: res.statusCode,
      headers: res.headers,
      body,
      redirects,
      truncated,
      elapsedMs: Date.now() - started,
    }
  }
}

/**
 * A TCP (or, with `tls`, TLS) connection to a checked public address. Resolves the connected
 * socket; rejects with the socket error (the caller decides whether "refused" is an answer).
 */
export function connectPublic(
  address: string,
  port: number,
  opts: { timeoutMs?: number; tls?: ConnectionOptions } = {},
): Promise<Socket | TLSSocket> {
  return new Promise((resolve, reject) => {
    const timeoutMs = opts.timeoutMs ?? 5_000
    const socket = opts.tls ? tlsConnect({ host: address, port, ...opts.tls }) : netConnect({ host: address, port })
    const fail = () => {
      socket.destroy()
      reject(Object.assign(new Error('timed out'), { code: 'ETIMEDOUT' }))
    }
    const timer = setTimeout(fail, timeoutMs)
    // a call past its time closes its sockets, connected or not (the caller may still hold this one)
    const task = taskSignal()
    const onAbort = () => {
      clearTimeout(timer)
      fail()
    }
    task?.addEventListener('abort', onAbort, { once: true })
    socket.once('close', () => task?.removeEventListener('abort', onAbort))
    if (task?.aborted) onAbort()
    socket.once(opts.tls ? 'secureConnect' : 'connect', () => {
      clearTimeout(timer)
      resolve(socket)
    })
    socket.once('error', (err) => {
      clearTimeout(timer)
      socket.destroy()
      reject(err)
    })
  })
}

/** A resolver honouring DNS_SERVERS (comma-separated ip or ip:port), else the system's. */
export function dnsResolver(ctx: HandlerContext, timeoutMs = 5_000): dnsPromises.Resolver {
  const r = new dnsPromises.Resolver({ timeout: timeoutMs, tries: 2 })
  const servers = optionalSetting(ctx, 'DNS_SERVERS')
  if (servers)
    r.setServers(
      servers
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
    )
  // a call past its time cancels its outstanding queries (they reject with ECANCELLED)
  taskSignal()?.addEventListener('abort', () => r.cancel(), { once: true })
  return r
}

export function errorCode(err: unknown): string {
  const e = err as { code?: string; name?: string; cause?: { code?: string } }
  return (
    e?.code ??
    e?.cause?.code ??
    (e?.name === 'TimeoutError' || e?.name === 'AbortError' ? 'ETIMEDOUT' : (e?.name ?? 'error'))
  )
}

async function readCapped(body: Dispatcher.ResponseData['body'], maxBytes: number): Promise<Buffer> {
  const { body: buf, truncated } = await readUpTo(body, maxBytes)
  if (truncated) throw new Error(`the answer is larger than ${maxBytes} bytes`)
  return buf
}

async function readUpTo(
  body: Dispatcher.ResponseData['body'],
  maxBytes: number,
): Promise<{ body: Buffer; truncated: boolean }> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of body) {
    const b = chunk as Buffer
    if (size + b.length > maxBytes) {
      chunks.push(b.subarray(0, maxBytes - size))
      body.destroy()
      return { body: Buffer.concat(chunks), truncated: true }
    }
    chunks.push(b)
    size += b.length
  }
  return { body: Buffer.concat(chunks), truncated: false }
}

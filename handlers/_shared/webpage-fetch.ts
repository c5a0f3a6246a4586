/**
 * Fetching a buyer-named web page for the webpage handlers (web-scraper, seo-analyzer,
 * http-security-headers-analyzer, tech-stack-detector, gdpr-compliance-scanner).
 *
 * Every request goes through `fetchPublicUrl` with redirects followed here, one hop at a time,
 * so each hop's address is checked again and each hop's headers (Set-Cookie above all) stay
 * visible to the caller; fetchPublicUrl alone keeps only the last answer's headers.
 *
 * @example
 *   const page = await fetchPage(input.url, ctx, { field: 'url' })
 *   page.hops[0].headers['set-cookie'] // cookies the first answer set, even when it redirected
 */
import { HandlerUpstreamError, type HandlerContext } from '../../src/pool/handler-contract.js'
import { fetchPublicUrl, parsePublicUrl } from './outbound.js'

export type Headers = Record<string, string | string[] | undefined>

export interface PageHop {
  url: string
  status: number
  headers: Headers
}

export interface FetchedPage {
  /** the URL asked for, normalised */
  url: string
  finalUrl: string
  status: number
  /** headers of the final answer (undici lower-cases the names) */
  headers: Headers
  body: Buffer
  /** true when the body was cut at maxBytes */
  truncated: boolean
  /** the URLs redirected from, in order */
  redirects: Array<{ url: string; status: number }>
  /** every answer received, redirects first, the final answer last */
  hops: PageHop[]
  /** media type of the final answer, lower-case, without parameters; null when absent */
  mimeType: string | null
  /** charset parameter of Content-Type, when given */
  charset: string | null
  elapsedMs: number
}

export interface FetchPageOptions {
  field: string
  method?: 'GET' | 'HEAD'
  /** default 2 MB */
  maxBytes?: number
  /** for the whole chain of redirects; default 15 s */
  timeoutMs?: number
  /** default 5 */
  maxRedirects?: number
  headers?: Record<string, string>
}

export const PAGE_MAX_BYTES = 2 * 1024 * 1024

/** Browser-like Accept so servers answer with their HTML page rather than an API variant. */
const ACCEPT_HTML = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8'

/** Fetches a page the buyer named, following up to maxRedirects redirects with every hop checked. */
export async function fetchPage(raw: string, ctx: HandlerContext, opts: FetchPageOptions): Promise<FetchedPage> {
  const started = Date.now()
  const deadline = started + (opts.timeoutMs ?? 15_000)
  const maxRedirects = opts.maxRedirects ?? 5
  const first = parsePublicUrl(raw, opts.field)
  const hops: PageHop[] = []
  let url = first
  for (;;) {
    const remaining = deadline - Date.now()
    if (remaining <= 0)
      throw new HandlerUpstreamError('upstream_failed', `${first.hostname} could not be fetched (ETIMEDOUT)`)
    const res = await fetchPublicUrl(url.toString(), ctx, {
      field: opts.field,
      method: opts.method ?? 'GET',
      headers: { accept: ACCEPT_HTML, 'accept-language': 'en;q=0.9, *;q=0.5', ...opts.headers },
      timeoutMs: remaining,
      maxBytes: opts.maxBytes ?? PAGE_MAX_BYTES,
      maxRedirects: 0,
    })
    hops.push({ url: url.toString(), status: res.status, headers: res.headers })
    const location = headerValue(res.headers, 'location')
    if (res.status >= 300 && res.status < 400 && location !== undefined && hops.length <= maxRedirects) {
      try {
        url = parsePublicUrl(new URL(location, url).toString(), opts.field)
      } catch {
        throw new HandlerUpstreamError('upstream_failed', `${url.hostname} redirected to an invalid location`)
      }
      continue
    }
    const { mimeType, charset } = parseContentType(headerValue(res.headers, 'content-type'))
    return {
      url: first.toString(),
      finalUrl: url.toString(),
      status: res.status,
      headers: res.headers,
      body: res.body,
      truncated: res.truncated,
      redirects: hops.slice(0, -1).map((h) => ({ url: h.url, status: h.status })),
      hops,
      mimeType,
      charset,
      elapsedMs: Date.now() - started,
    }
  }
}

/** One header as a string (repeated headers joined with ", "), or undefined. */
export function headerValue(headers: Headers, name: string): string | undefined {
  const v = headers[name.toLowerCase()]
  if (v === undefined) return undefined
  return Array.isArray(v) ? v.join(', ') : v
}

/** Every occurrence of a header (Set-Cookie comes as several). */
export function headerValues(headers: Headers, name: string): string[] {
  const v = headers[name.toLowerCase()]
  if (v === undefined) return []
  return Array.isArray(v) ? v : [v]
}

/** `text/html; charset=UTF-8` → { mimeType: 'text/html', charset: 'utf-8' } */
export function parseContentType(value: string | undefined): { mimeType: string | null; charset: string | null } {
  if (!value) return { mimeType: null, charset: null }
  const [type, ...params] = value.split(';')
  const mimeType = type!.trim().toLowerCase() || null
  const cs = params.map((p) => p.trim()).find((p) => p.toLowerCase().startsWith('charset='))
  return { mimeType, charset: cs ? cs.slice(8).trim().replace(/^"|"$/g, '').toLowerCase() || null : null }
}

export const isHtmlType = (mime: string | null) => mime === 'text/html' || mime === 'application/xhtml+xml'
export const isJsonType = (mime: string | null) =>
  mime !== null && (mime === 'application/json' || mime.endsWith('+json'))

export interface SetCookie {
  name: string
  secure: boolean
  httpOnly: boolean
  /** the SameSite attribute as sent (Strict, Lax, None), or null when absent */
  sameSite: string | null
  domain: string | null
  path: string | null
  /** true when Expires or Max-Age makes it outlive the browser session */
  persistent: boolean
  /** seconds from Max-Age, else from Expires against now; null for session cookies */
  lifetimeSeconds: number | null
}

/** Parses one Set-Cookie line (RFC 6265 section 5.2); the cookie's value is deliberately left out. */
export function parseSetCookie(line: string, now = Date.now()): SetCookie | null {
  const [pair, ...attrs] = line.split(';')
  const eq = pair!.indexOf('=')
  const name = (eq === -1 ? '' : pair!.slice(0, eq)).trim()
  if (!name) return null
  const out: SetCookie = {
    name,
    secure: false,
    httpOnly: false,
    sameSite: null,
    domain: null,
    path: null,
    persistent: false,
    lifetimeSeconds: null,
  }
  let maxAge: number | null = null
  let expires: number | null = null
  for (const a of attrs) {
    const i = a.indexOf('=')
    const key = (i === -1 ? a : a.slice(0, i)).trim().toLowerCase()
    const val = i === -1 ? '' : a.slice(i + 1).trim()
    if (key === 'secure') out.secure = true
    else if (key === 'httponly') out.httpOnly = true
    else if (key === 'samesite') out.sameSite = val || null
    else if (key === 'domain') out.domain = val.replace(/^\./, '').toLowerCase() || null
    else if (key === 'path') out.path = val || null
    else if (key === 'max-age' && /^-?\d+$/.test(val)) maxAge = Number(val)
    else if (key === 'expires') {
      const t = Date.parse(val)
      if (!Number.isNaN(t)) expires = t
    }
  }
  // Max-Age wins over Expires (RFC 6265 5.3 step 3)
  if (maxAge !== null) out.lifetimeSeconds = maxAge
  else if (expires !== null) out.lifetimeSeconds = Math.round((expires - now) / 1000)
  out.persistent = out.lifetimeSeconds !== null
  return out
}

/** Host of a URL without a leading "www.", for "same site" comparisons. */
export function bareHost(url: string | URL): string {
  const h = (typeof url === 'string' ? new URL(url) : url).hostname.toLowerCase()
  return h.startsWith('www.') ? h.slice(4) : h
}

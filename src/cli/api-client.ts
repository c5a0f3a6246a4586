/**
 * The Tollgate API as the commands call it: JSON in and out, the API key or the agent key as the
 * bearer, an answer >= 400 thrown as ApiError, a host that does not answer as UnreachableError.
 */
import type { FetchLike } from '../client/wrap-fetch.js'
import { ApiError, UnreachableError, UsageError, type Credential } from './errors.js'
import type { Io } from './io.js'
import type { Settings } from './settings.js'

export const NO_AGENT_KEY =
  'no agent key: run tollgate setup, or set TOLLGATE_AGENT_KEY (or "agent_key" in the context, ~/.config/tollgate/config.json)'
export const NO_API_KEY = 'no API key: run tollgate login, or set TOLLGATE_API_KEY'

export interface RequestOptions {
  body?: unknown
  query?: Record<string, string | number | undefined>
  headers?: Record<string, string>
}

export interface Api {
  readonly apiUrl: string
  readonly fetch: FetchLike
  /** a /v1 route with the user's API key */
  user<T = any>(method: string, path: string, opts?: RequestOptions): Promise<T>
  /** a /v1/agent route with the agent key */
  agent<T = any>(method: string, path: string, opts?: RequestOptions): Promise<T>
  /** a route that needs no credential (the marketplace), or one given in opts.headers */
  anonymous<T = any>(method: string, path: string, opts?: RequestOptions): Promise<T>
  /** a /v1 route with the user's API key, its answer unread (an export streams); >= 400 is thrown as usual */
  userRaw(method: string, path: string, opts?: RequestOptions): Promise<Response>
}

export function createApi(
  io: Io,
  s: Pick<Settings, 'apiUrl' | 'apiUrlSource' | 'apiKey' | 'apiKeySource' | 'agentKey' | 'agentKeySource'>,
): Api {
  const f = namingFetch(io.fetch ?? fetch, s.apiUrl, s.apiUrlSource)
  const send = (bearer: string | undefined, method: string, path: string, o: RequestOptions) => {
    const url = new URL(`${s.apiUrl}${path}`)
    for (const [k, v] of Object.entries(o.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v))
    const headers: Record<string, string> = { accept: 'application/json', ...o.headers }
    if (bearer) headers.authorization = `Bearer ${bearer}`
    if (o.body !== undefined) headers['content-type'] = 'application/json'
    return f(url, { method, headers, body: o.body === undefined ? undefined : JSON.stringify(o.body) })
  }
  const call = async (
    credential: Credential,
    bearer: string | undefined,
    method: string,
    path: string,
    o: RequestOptions = {},
    raw = false,
  ) => {
    const res = await send(bearer, method, path, o)
    if (raw && res.ok) return res
    const text = await res.text()
    let body: any
    try {
      body = text === '' ? undefined : JSON.parse(text)
    } catch {
      body = undefined
    }
    if (!res.ok) {
      const {
        statusCode: _s,
        error: _e,
        code,
        message,
        ...details
      } = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>
      if (res.status === 429 && res.headers.get('retry-after')) details.retry_after = res.headers.get('retry-after')
      throw new ApiError(
        res.status,
        typeof code === 'string' ? code : 'http_error',
        typeof message === 'string'
          ? message
          : `${res.status} ${res.statusText}${text && body === undefined ? `: ${text.slice(0, 200)}` : ''}`,
        details,
        credential,
        `${method} ${path}`,
        credential === 'agent_key' ? s.agentKeySource : s.apiKeySource,
      )
    }
    if (body === undefined && text !== '')
      throw new UsageError(
        `${s.apiUrl} answered ${method} ${path} with something other than JSON: is it the Tollgate API? (${s.apiUrlSource})`,
      )
    return body
  }
  return {
    apiUrl: s.apiUrl,
    fetch: f,
    user: (method, path, o) => {
      if (!s.apiKey) throw new UsageError(NO_API_KEY)
      return call('api_key', s.apiKey, method, path, o)
    },
    agent: (method, path, o) => {
      if (!s.agentKey) throw new UsageError(NO_AGENT_KEY)
      return call('agent_key', s.agentKey, method, path, o)
    },
    anonymous: (method, path, o) => call('none', undefined, method, path, o),
    userRaw: (method, path, o) => {
      if (!s.apiKey) throw new UsageError(NO_API_KEY)
      return call('api_key', s.apiKey, method, path, o, true)
    },
  }
}

/**
 * `f` with undici's bare "fetch failed" replaced by the address that did not answer and the
 * cause's code; the platform API is named as such, with where its address comes from.
 */
export function namingFetch(f: FetchLike, apiUrl: string, apiUrlSource = 'TOLLGATE_API_URL'): FetchLike {
  return async (input, init) => {
    try {
      return await f(input, init)
    } catch (err) {
      const cause = (err as { cause?: { code?: unknown; message?: unknown } }).cause
      if (!(err instanceof TypeError) || err.message !== 'fetch failed' || cause === undefined) throw err
      const url = new URL(input instanceof Request ? input.url : input)
      const why = typeof cause.code === 'string' ? cause.code : String(cause.message)
      if (url.href.startsWith(`${apiUrl}/`)) {
        const where =
          apiUrlSource === 'TOLLGATE_API_URL' || apiUrlSource.startsWith('the default')
            ? 'Set TOLLGATE_API_URL or "api_url" in ~/.config/tollgate/config.json'
            : `It comes from ${apiUrlSource}; TOLLGATE_API_URL overrides it`
        throw new UnreachableError(`cannot reach the Tollgate API at ${apiUrl} (${why}): is it running? ${where}`)
      }
      throw new UnreachableError(`cannot reach ${url.origin} (${why})`)
    }
  }
}

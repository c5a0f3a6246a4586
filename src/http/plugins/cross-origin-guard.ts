import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { Config } from '../../config.js'
import { appError } from '../../errors.js'
import { sendAppError } from '../../error-render.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** a route that sets a cookie credential (login): guarded like one that is authenticated by one */
    setsCookieCredential?: boolean
  }
}

export interface CrossOriginGuardOptions {
  /** the origins the dashboard is served from, its own first (`dashboardOrigins(config)`) */
  origins: readonly string[]
  /** the cookies that authenticate a request when it has no Authorization header */
  cookies: readonly string[]
}

/** The origins of DASHBOARD_URL and BASE_URL (once if they are the same): where the dashboard's own requests come from. */
export function dashboardOrigins(config: Pick<Config, 'baseUrl' | 'dashboardUrl'>): string[] {
  return [...new Set([new URL(config.dashboardUrl).origin, new URL(config.baseUrl).origin])]
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS'])

/**
 * Refuses, with 403 `cross_origin_request`, a state-changing request that a cookie authenticates
 * (it carries one of `cookies` and no Authorization header) or that logs in, when a browser says it
 * comes from a page of another origin. SameSite=Lax keeps cookies off cross-site requests but not
 * off same-site ones: a page on the proxy's port or on a sibling subdomain could otherwise make the
 * dashboard user's browser create keys or agents.
 *
 * The decision, after Go's net/http CrossOriginProtection (Filippo Valsorda, 2025):
 * 1. GET, HEAD, OPTIONS pass (they change nothing).
 * 2. `Origin` equal to one of `origins` passes: the dashboard itself, whatever Host a reverse proxy
 *    hands on.
 * 3. `Sec-Fetch-Site` present (every current browser, on https and localhost): `same-origin` or
 *    `none` (typed by the user) passes; `same-site` and `cross-site` are refused.
 * 4. No `Sec-Fetch-Site`: an `Origin` (another one, or `null`) is refused. Neither header: passes.
 *    Browsers send `Origin` on every POST, PUT, PATCH and DELETE (the Fetch standard), so a request
 *    with neither comes from a program such as curl, which no page can make a user's browser send,
 *    and which holds the cookie itself (docs/api.md).
 *
 * Runs as an onRequest hook of the whole app, before authentication and before the body is read.
 *
 * @example
 *   installCrossOriginGuard(app, { origins: dashboardOrigins(config), cookies: [SESSION_COOKIE] })
 */
export function installCrossOriginGuard(app: FastifyInstance, opts: CrossOriginGuardOptions): void {
  const origins = new Set(opts.origins)
  const dashboard = opts.origins[0] ?? 'its own origin'
  app.addHook('onRequest', async (request, reply) => {
    if (SAFE_METHODS.has(request.method)) return
    if (
      !request.routeOptions.config?.setsCookieCredential &&
      !(request.headers.authorization === undefined && carriesCookie(request, opts.cookies))
    )
      return
    const from = foreignOrigin(request, origins)
    // answered here rather than thrown, as the input guard does: a plugin with its own error handler cannot reshape it
    if (from !== undefined) return sendAppError(reply, appError('cross_origin_request', { from, dashboard }))
  })
}

/** Undefined when the request may go on; otherwise where it comes from, for the message. */
function foreignOrigin(request: FastifyRequest, origins: Set<string>): string | undefined {
  const origin = header(request, 'origin')
  if (origin !== undefined && origins.has(origin)) return undefined
  const site = header(request, 'sec-fetch-site')
  if (site !== undefined) return site === 'same-origin' || site === 'none' ? undefined : describe(origin, site)
  return origin === undefined ? undefined : describe(origin, undefined)
}

function describe(origin: string | undefined, site: string | undefined): string {
  // the Origin is the caller's to write (curl): quote it only when it has the shape of one
  const shown =
    origin !== undefined && /^https?:\/\/[A-Za-z0-9.:[\]-]{1,260}$/.test(origin)
      ? origin
      : origin === 'null'
        ? 'an opaque origin (Origin: null)'
        : 'another origin'
  return site === undefined ? shown : `${shown} (Sec-Fetch-Site: ${site.slice(0, 20)})`
}

function header(request: FastifyRequest, name: string): string | undefined {
  const v = request.headers[name]
  return typeof v === 'string' ? v : undefined
}

function carriesCookie(request: FastifyRequest, names: readonly string[]): boolean {
  const cookies = request.headers.cookie
  if (!cookies) return false
  return cookies.split(';').some((pair) => {
    const eq = pair.indexOf('=')
    // an empty value is no credential (the auth hook ignores it too)
    return eq > 0 && names.includes(pair.slice(0, eq).trim()) && pair.slice(eq + 1).trim() !== ''
  })
}

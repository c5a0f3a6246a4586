import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import type { FastifyInstance } from 'fastify'

/**
 * The static files: src/http/dashboard/ from source (tsx), dist/src/http/dashboard/ after
 * `npm run build` (the build script copies them; tsc copies only what it compiles).
 */
export const DASHBOARD_DIR = fileURLToPath(new URL('../../dashboard/', import.meta.url))

/** No inline script or style, nothing from another origin, never framed. */
export const DASHBOARD_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ')

const SECURITY_HEADERS = {
  'cache-control': 'no-cache',
  'content-security-policy': DASHBOARD_CSP,
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
}

/**
 * The ES modules, by name: app.js is the entry and imports the others. Only the files listed here
 * are served (anything else under /dashboard/ is a 404); a module added to the folder goes here too.
 */
export const DASHBOARD_MODULES = [
  'app.js',
  'api.js',
  'dom.js',
  'format.js',
  'ui.js',
  'keys.js',
  'agents.js',
  'agent.js',
  'overview.js',
  'payment.js',
  'funding.js',
  'transactions.js',
  'sellers.js',
  'endpoint-form.js',
  'mcp-upstream.js',
  'withdraw.js',
  'insights.js',
  'charts.js',
  'marketplace.js',
  'signup.js',
  'webhooks.js',
  'approvals.js',
] as const

/**
 * Libraries the dashboard loads from our own origin (the CSP allows no other), read from the
 * installed package: uPlot draws the Insights charts (~50 KB, no dependencies, canvas; no inline
 * styles, so it runs under `style-src 'self'`).
 */
const requireFromHere = createRequire(import.meta.url)
export const DASHBOARD_VENDOR = [
  {
    path: '/dashboard/vendor/uPlot.esm.js',
    file: path.join(path.dirname(requireFromHere.resolve('uplot')), 'uPlot.esm.js'),
    type: 'text/javascript; charset=utf-8',
  },
  {
    path: '/dashboard/vendor/uPlot.min.css',
    file: path.join(path.dirname(requireFromHere.resolve('uplot')), 'uPlot.min.css'),
    type: 'text/css; charset=utf-8',
  },
] as const

const FILES = [
  { paths: ['/dashboard', '/dashboard/'], file: 'index.html', type: 'text/html; charset=utf-8' },
  { paths: ['/dashboard/app.css'], file: 'app.css', type: 'text/css; charset=utf-8' },
  ...DASHBOARD_MODULES.map((file) => ({ paths: [`/dashboard/${file}`], file, type: 'text/javascript; charset=utf-8' })),
]

/**
 * The dashboard web app at /dashboard: one HTML page, a stylesheet and a few ES modules, read once at
 * registration (a missing file fails the start, not the first visitor). It talks to /v1 with the
 * session cookie; nothing here is an API route, so none of it is in the OpenAPI document.
 */
export function dashboardRoutes(dir: string = DASHBOARD_DIR) {
  return async function (app: FastifyInstance) {
    app.addHook('onRoute', (route) => void (route.schema = { ...route.schema, hide: true }))
    for (const { paths, file, type } of [
      ...FILES,
      ...DASHBOARD_VENDOR.map((v) => ({ paths: [v.path], file: v.file, type: v.type })),
    ]) {
      let body: Buffer
      try {
        body = readFileSync(path.isAbsolute(file) ? file : dir + file)
      } catch (err) {
        throw new Error(
          `dashboard file ${file} not found in ${dir} (after a build, run \`npm run build\` again: it copies src/http/dashboard/ to dist/): ${(err as Error).message}`,
        )
      }
      // no-cache means "revalidate": the ETag lets a browser keep its copy until the file changes
      const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`
      for (const path of paths) {
        app.get(path, async (request, reply) => {
          reply.headers(SECURITY_HEADERS).header('etag', etag)
          if (request.headers['if-none-match'] === etag) return reply.code(304).send()
          return reply.type(type).send(body)
        })
      }
    }
  }
}

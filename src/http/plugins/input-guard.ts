import type { FastifyInstance } from 'fastify'
import { appError } from '../../errors.js'
import { sendAppError } from '../../error-render.js'

/** deeper JSON is refused: serializing it (idempotency fingerprints, jsonb columns) would overflow the stack */
export const MAX_JSON_DEPTH = 64

/**
 * Input no route could store or serialize, refused before any route sees it, as a 400
 * `invalid_parameter` naming where it was: a NUL character or a lone UTF-16 surrogate in a path
 * parameter, the query string or a JSON body (keys included) — Postgres text and jsonb cannot hold
 * either — and JSON nested deeper than MAX_JSON_DEPTH levels.
 *
 * @example
 *   installInputGuard(app) // before the routes
 */
export function installInputGuard(app: FastifyInstance): void {
  app.addHook('preValidation', async (request, reply) => {
    // a POST, PUT or PATCH sent with no body at all (curl -X POST) means an empty JSON object, so a
    // route whose fields are all optional takes it, and one with required fields names them
    if (
      request.body === undefined &&
      (request.method === 'POST' || request.method === 'PUT' || request.method === 'PATCH')
    )
      request.body = {}
    const problem =
      inspect(request.params, '', 0, false) ??
      inspect(request.query, '', 0, false) ??
      inspect(request.body, '', 0, true)
    // answered here rather than thrown, so a plugin with its own error handler (the queue board) cannot reshape it
    if (problem)
      return sendAppError(
        reply,
        appError(
          'invalid_parameter',
          { param: problem.param, detail: problem.detail },
          { details: { param: problem.param } },
        ),
      )
  })
}

interface Problem {
  param: string
  detail: string
}

// a high surrogate not followed by a low one, or a low one not preceded by a high one (code units, no `u` flag)
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/

function badText(s: string): string | undefined {
  if (s.includes('\u0000')) return 'contains a NUL character'
  if (LONE_SURROGATE.test(s)) return 'contains an unpaired UTF-16 surrogate (not valid Unicode)'
  return undefined
}

function inspect(value: unknown, path: string, depth: number, body: boolean): Problem | undefined {
  const name = path || 'body'
  if (typeof value === 'string') {
    const bad = badText(value)
    return bad ? { param: name, detail: `${name} ${bad}` } : undefined
  }
  if (value === null || typeof value !== 'object' || Buffer.isBuffer(value)) return undefined
  if (depth >= MAX_JSON_DEPTH)
    return { param: name, detail: `${body ? 'the body' : name} is nested more than ${MAX_JSON_DEPTH} levels deep` }
  const entries = Array.isArray(value) ? value.map((v, i) => [String(i), v] as const) : Object.entries(value)
  for (const [key, v] of entries) {
    const at = path ? `${path}.${key}` : key
    const badKey = badText(key)
    if (badKey) return { param: at, detail: `a key of ${path || 'the input'} ${badKey}` }
    const p = inspect(v, at, depth + 1, body)
    if (p) return p
  }
  return undefined
}

import { appError, type AppError } from '../../errors.js'
import { missingSettings, rateLimitOf, type HandlerRateLimit } from '../../pool/handler-contract.js'
import type { RegisteredHandler } from '../../pool/handler-registry.js'
import type { EndpointEntry } from '../endpoint-table.js'
import { FORWARD_TIMEOUT_MS, type UpstreamOptions } from '../upstream.js'
import type { CallRequest, CallTarget, ResolvedCall } from './call.js'
import { CallRefusal } from './refusal.js'

export interface InputSettings {
  handlers: ReadonlyMap<string, RegisteredHandler>
  /** provider settings of hosted handlers (their `ctx.providers`) */
  providers: Record<string, string | undefined>
  allowPrivateNetwork: boolean
  /** a hosted handler's time limit when it declares none */
  defaultTimeoutMs: number
  /** an upstream endpoint's settings with secrets decrypted */
  upstreamOptions(entry: EndpointEntry): UpstreamOptions
}

const NO_PROVIDERS: Record<string, string | undefined> = Object.freeze({})

/** What a hosted handler lacks and its own rate limit, fixed for the process by the provider settings. */
interface HandlerTerms {
  missing: string[]
  rateLimit: HandlerRateLimit | undefined
}

/**
 * Stage 2: what the call will run, with its input checked before any payment work, so bad input
 * costs the buyer nothing, not even a record. Returns a function per process: what each handler
 * lacks and its own rate limit depend only on the provider settings, fixed for the process.
 */
export function createInputParser(s: InputSettings) {
  const terms = new Map<RegisteredHandler, HandlerTerms>(
    [...s.handlers.values()].map((h) => [
      h,
      { missing: missingSettings(h.module, s.providers), rateLimit: rateLimitOf(h.module, s.providers) },
    ]),
  )

  return function parseInput(call: ResolvedCall, req: CallRequest): CallTarget | CallRefusal {
    const { entry } = call
    if (!entry.handler) return upstreamTarget(s, entry, req)
    const handler = s.handlers.get(entry.handler)
    if (!handler)
      return CallRefusal.error(
        appError('service_unavailable', { detail: `the handler of ${entry.path} is not available in this process` }),
      )
    return hostedTarget(s, handler, terms.get(handler)!, call, req)
  }
}

/** A seller's upstream endpoint: its stored settings readable and the headers it requires present. */
function upstreamTarget(s: InputSettings, entry: EndpointEntry, req: CallRequest): CallTarget | CallRefusal {
  const options = s.upstreamOptions(entry)
  // forwarding without the seller's stored settings would skip its headers, limit and signature
  if (options.unreadable) {
    return CallRefusal.error(
      appError('service_unavailable', {
        detail: "this proxy cannot read the endpoint's settings (TOLLGATE_MASTER_KEY is not set); nothing was charged",
      }),
    )
  }
  const missing = (options.requiredHeaders ?? []).find((h) => req.headers[h] === undefined)
  if (missing)
    return CallRefusal.error(
      appError(
        'invalid_parameter',
        { param: missing, detail: `the ${missing} header is required by this endpoint` },
        { details: { param: missing } },
      ),
    )
  const base = {
    kind: 'upstream',
    recordFirst: true,
    origin: entry.upstream!.url,
    options,
    timeoutMs: options.timeoutMs ?? FORWARD_TIMEOUT_MS,
    rateLimit: options.rateLimit,
  } as const
  if (!entry.mcpTool && !entry.a2aSkill) return base
  // an upstream MCP tool or A2A skill takes its input as a JSON object (MCP's or A2A's, or an HTTP call's body)
  const args = req.input ?? readInput(req, 'POST')
  if (args instanceof CallRefusal) return args
  if (entry.a2aSkill) return { ...base, a2a: { skill: entry.a2aSkill, input: args } }
  return { ...base, mcp: { tool: entry.mcpTool!, arguments: args } }
}

/** A hosted handler: its provider settings set and its input valid against its schema. */
function hostedTarget(
  s: InputSettings,
  handler: RegisteredHandler,
  { missing, rateLimit }: HandlerTerms,
  { entry, method }: ResolvedCall,
  req: CallRequest,
): CallTarget | CallRefusal {
  // an endpoint whose provider settings are unset could only fail: refused before any payment work
  if (missing.length) {
    return CallRefusal.error(
      appError('upstream_not_configured', {
        detail: `${entry.handler} needs ${missing.join(', ')}, which this deployment has not set; nothing was charged`,
      }),
    )
  }
  const parsed = req.input ?? readInput(req, method)
  if (parsed instanceof CallRefusal) return parsed
  // a query's strings are coerced to the schema's types; JSON (a body, MCP arguments) is taken as typed
  const problem = handler.validate(parsed, method === 'GET' && req.input === undefined ? 'query' : 'body')
  if (problem)
    return CallRefusal.error(
      appError(
        'invalid_parameter',
        { param: problem.field, detail: problem.message },
        { details: { param: problem.field } },
      ),
    )
  return {
    kind: 'hosted',
    recordFirst: handler.module.effects === true,
    handler,
    slug: entry.handler!,
    input: parsed,
    timeoutMs: handler.module.timeoutMs ?? s.defaultTimeoutMs,
    rateLimit,
    ctx: {
      method: method as 'GET' | 'POST',
      accept: String(req.headers.accept ?? '*/*').toLowerCase(),
      // only handlers that reach outside read settings; the others are spared copying all of them per call
      providers: handler.io ? s.providers : NO_PROVIDERS,
      allowPrivateNetwork: s.allowPrivateNetwork,
    },
  }
}

/** A hosted handler's input: the query of a GET, else the JSON object in the body (empty: `{}`). */
function readInput(req: CallRequest, method: string): Record<string, unknown> | CallRefusal {
  if (method === 'GET') return { ...req.query }
  const body = req.body
  if (!body || body.length === 0) return {}
  const type = String(req.headers['content-type'] ?? '')
  if (type && !type.includes('json')) return CallRefusal.error(appError('unsupported_media_type', { type }))
  const bad = (detail: string): AppError =>
    appError('invalid_parameter', { param: 'body', detail }, { details: { param: 'body' } })
  try {
    const parsed = JSON.parse(body.toString('utf8'))
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
      return CallRefusal.error(bad('expected a JSON object'))
    return parsed
  } catch {
    return CallRefusal.error(bad('the body is not valid JSON'))
  }
}

import type { Readable } from 'node:stream'
import { AppError, appError } from '../../errors.js'
import type { HandlerPool, PoolOutcome } from '../../pool/handler-pool.js'
import type { UpstreamClient } from '../upstream.js'
import { MCP_TOOL_RESULT_TYPE } from '../../transports/mcp.js'
import type { UpstreamMcpClient } from '../upstream-mcp.js'
import type { UpstreamA2aClient } from '../upstream-a2a.js'
import { A2A_AGENT_RESULT_TYPE } from '../../transports/a2a.js'
import type { CallRequest, CallTarget, HostedTarget, UpstreamTarget } from './call.js'
import { CallRefusal } from './refusal.js'

/** The endpoint's answer to send on. */
export interface EndpointAnswer {
  status: number
  contentType?: string
  headers?: Record<string, string | string[]>
  body: Buffer | string | Readable
}

export type Dispatched =
  /** answered < 400: the payment is kept */
  | { ok: true; answer: EndpointAnswer }
  /**
   * failed: the payment is voided for `reason`; the buyer gets the endpoint's own answer (>= 400)
   * when there is one, else the refusal
   */
  | { ok: false; reason: string; answer?: EndpointAnswer; refusal?: CallRefusal }

/** Stage 6: run the endpoint — a hosted handler in the pool, or the seller's upstream through undici. */
export function createDispatcher(opts: DispatcherOptions) {
  return (target: CallTarget, req: CallRequest, paymentId: string): Promise<Dispatched> =>
    target.kind === 'hosted' ? hosted(opts, target, req) : upstream(opts, target, req, paymentId)
}

export interface DispatcherOptions {
  pool: HandlerPool
  upstream: UpstreamClient
  upstreamMcp?: UpstreamMcpClient
  upstreamA2a?: UpstreamA2aClient
}
async function hosted(opts: DispatcherOptions, t: HostedTarget, req: CallRequest): Promise<Dispatched> {
  const out = await opts.pool.run({ file: t.handler.file, slug: t.slug, io: t.handler.io }, t.input, t.ctx, t.timeoutMs)
  if (out.kind === 'ok') {
    const answer: EndpointAnswer = {
      status: out.status,
      contentType: out.contentType,
      body:
        typeof out.body === 'string'
          ? out.body
          : Buffer.from(out.body.buffer, out.body.byteOffset, out.body.byteLength),
    }
    return out.status < 400 ? { ok: true, answer } : { ok: false, reason: 'handler_failed', answer }
  }
  const error = handlerError(out)
  // under `err`, so the log's serializer cuts any URL in the message to its host (a provider URL may hold a key)
  if (out.kind === 'error' || out.kind === 'crashed') req.log.warn({ slug: t.slug, err: out.message }, 'handler failed')
  return { ok: false, reason: error.code, refusal: CallRefusal.error(error) }
}

async function upstream(
  opts: DispatcherOptions,
  t: UpstreamTarget,
  req: CallRequest,
  paymentId: string,
): Promise<Dispatched> {
  if (t.mcp) return upstreamTool(opts, t, t.mcp, req, paymentId)
  if (t.a2a) return upstreamSkill(opts.upstreamA2a, t, t.a2a, req, paymentId)
  const q = req.url.indexOf('?')
  let res
  try {
    res = await opts.upstream.forward({
      origin: t.origin,
      subPath: q >= 0 ? req.url.slice(q) : '',
      method: req.method,
      headers: req.headers,
      body: req.body,
      options: t.options,
      paymentId,
    })
  } catch (err) {
    const timedOut = /timeout/i.test((err as Error).name + (err as Error).message)
    if ((err as { code?: string }).code !== 'ESSRF')
      req.log.warn({ err: (err as Error).message, endpoint: req.path }, 'upstream failed')
    const error = timedOut
      ? appError('handler_timeout', { timeoutMs: t.timeoutMs })
      : appError('upstream_failed', { detail: 'the seller origin could not be reached' })
    return { ok: false, reason: 'upstream_failed', refusal: CallRefusal.error(error) }
  }
  const answer: EndpointAnswer = { status: res.status, headers: res.headers, body: res.body }
  return res.status < 400 ? { ok: true, answer } : { ok: false, reason: `upstream_status_${res.status}`, answer }
}

/** A tool of the seller's MCP server: its result is the answer; a tool error (isError) voids the payment. */
async function upstreamTool(
  opts: DispatcherOptions,
  t: UpstreamTarget,
  mcp: NonNullable<UpstreamTarget['mcp']>,
  req: CallRequest,
  paymentId: string,
): Promise<Dispatched> {
  if (!opts.upstreamMcp)
    return {
      ok: false,
      reason: 'upstream_failed',
      refusal: CallRefusal.error(
        appError('service_unavailable', {
          detail: 'this proxy does not call upstream MCP servers; nothing was charged',
        }),
      ),
    }
  let result
  try {
    result = await opts.upstreamMcp.callTool({
      url: t.origin,
      tool: mcp.tool,
      arguments: mcp.arguments,
      options: t.options,
      paymentId,
    })
  } catch (err) {
    const timedOut = /timeout|timed out/i.test((err as Error).name + (err as Error).message)
    if ((err as { code?: string }).code !== 'ESSRF')
      req.log.warn({ err: (err as Error).message, endpoint: req.path }, 'upstream MCP tool failed')
    const error = timedOut
      ? appError('handler_timeout', { timeoutMs: t.timeoutMs })
      : appError('upstream_failed', {
          detail: `the seller's MCP server failed: ${(err as Error).message.slice(0, 200)}`,
        })
    return { ok: false, reason: 'upstream_failed', refusal: CallRefusal.error(error) }
  }
  const answer: EndpointAnswer = {
    status: result.isError ? 502 : 200,
    contentType: MCP_TOOL_RESULT_TYPE,
    body: JSON.stringify(result),
  }
  return result.isError ? { ok: false, reason: 'upstream_tool_error', answer } : { ok: true, answer }
}

/**
 * A skill of the seller's A2A agent: its parts are the answer (A2A_AGENT_RESULT_TYPE); a task that
 * did not complete (failed, rejected, asked for input) voids the payment, as does an agent that
 * could not be reached or answered a JSON-RPC error.
 */
async function upstreamSkill(
  client: UpstreamA2aClient | undefined,
  t: UpstreamTarget,
  a2a: NonNullable<UpstreamTarget['a2a']>,
  req: CallRequest,
  paymentId: string,
): Promise<Dispatched> {
  if (!client)
    return {
      ok: false,
      reason: 'upstream_failed',
      refusal: CallRefusal.error(
        appError('service_unavailable', {
          detail: 'this proxy does not call upstream A2A agents; nothing was charged',
        }),
      ),
    }
  let answer
  try {
    answer = await client.sendMessage({
      cardUrl: t.origin,
      skill: a2a.skill,
      input: a2a.input,
      options: t.options,
      paymentId,
    })
  } catch (err) {
    const timedOut = /timeout|timed out|abort/i.test((err as Error).name + (err as Error).message)
    if ((err as { code?: string }).code !== 'ESSRF')
      req.log.warn({ err: (err as Error).message, endpoint: req.path }, 'upstream A2A agent failed')
    const error = timedOut
      ? appError('handler_timeout', { timeoutMs: t.timeoutMs })
      : appError('upstream_failed', {
          detail: `the seller's A2A agent failed: ${(err as Error).message.slice(0, 200)}`,
        })
    return { ok: false, reason: 'upstream_failed', refusal: CallRefusal.error(error) }
  }
  if (!answer.ok) {
    const body = JSON.stringify({
      parts: [{ kind: 'text', text: `the seller's agent ended the task ${answer.state}: ${answer.text}` }],
    })
    return {
      ok: false,
      reason: 'upstream_task_failed',
      answer: { status: 502, contentType: A2A_AGENT_RESULT_TYPE, body },
    }
  }
  return {
    ok: true,
    answer: { status: 200, contentType: A2A_AGENT_RESULT_TYPE, body: JSON.stringify({ parts: answer.parts }) },
  }
}

/** The catalogue error for a pool outcome that is not an answer. */
export function handlerError(out: Exclude<PoolOutcome, { kind: 'ok' }>): AppError {
  switch (out.kind) {
    case 'input': {
      if (out.status === 413) return new AppError('payload_too_large', 413, out.message, { param: out.field })
      // handlers often start their message with the field's name, which the template already says
      const detail = out.message.startsWith(`${out.field}: `) ? out.message.slice(out.field.length + 2) : out.message
      return appError(
        out.status === 422 ? 'unusable_parameter' : 'invalid_parameter',
        { param: out.field, detail },
        { details: { param: out.field } },
      )
    }
    case 'upstream':
      return appError(out.code, { detail: out.message })
    case 'timeout':
      return appError('handler_timeout', { timeoutMs: out.timeoutMs })
    case 'busy':
      return appError(
        'service_unavailable',
        { detail: 'every worker of this endpoint is busy; retry shortly; nothing was charged' },
        { headers: { 'retry-after': '1' } },
      )
    default:
      return appError('handler_failed', { detail: (out.kind === 'crashed' && out.detail) || 'the handler crashed' })
  }
}

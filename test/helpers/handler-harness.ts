import { compileInputValidator } from '../../src/pool/input-validator.js'
import type { HandlerContext, HandlerModule, HandlerResult } from '../../src/pool/handler-contract.js'
import { HandlerInputError } from '../../src/pool/handler-contract.js'

export type InlineOutcome =
  { ok: true; result: HandlerResult } | { ok: false; status: number; field: string; message: string }

/**
 * Runs a handler inline (no pool, no payment) the way the proxy does: validate, then run.
 * For per-handler unit tests; the pool and the paid path are tested elsewhere.
 */
export async function runInline(
  mod: HandlerModule,
  input: unknown,
  opts: Partial<HandlerContext> & { from?: 'query' | 'body' } = {},
): Promise<InlineOutcome> {
  const copy = structuredClone(input)
  const problem = compileInputValidator(mod).validate(copy, opts.from ?? 'body')
  if (problem) return { ok: false, status: 400, ...problem }
  const ctx: HandlerContext = {
    method: opts.method ?? (opts.from === 'query' ? 'GET' : 'POST'),
    accept: opts.accept ?? '*/*',
    providers: opts.providers ?? {},
    allowPrivateNetwork: opts.allowPrivateNetwork ?? true,
  }
  try {
    return { ok: true, result: await mod.run(copy, ctx) }
  } catch (err) {
    if (err instanceof HandlerInputError)
      return { ok: false, status: err.statusCode, field: err.field, message: err.message }
    throw err
  }
}

/**
 * The whole result of a successful runInline outcome (for tests that check contentType or status);
 * throws, failing the test with the handler's error, otherwise.
 */
export function okResult(o: InlineOutcome): HandlerResult {
  if (!o.ok) throw new Error(`expected success, got ${o.status} ${o.field}: ${o.message}`)
  return o.result
}

/**
 * The body of a successful runInline outcome; throws, failing the test with the handler's error, otherwise.
 * @example const out = okBody<{ slug: string }>(await runInline(handler, { text: 'Hi there' }))
 */
export function okBody<T = Record<string, any>>(o: InlineOutcome): T {
  return okResult(o).body as T
}

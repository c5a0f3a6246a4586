/**
 * Runs one hosted handler call where handler code may run: in a handler process
 * (handler-process.ts) or a thread-pool worker (worker.ts), never in the proxy itself.
 * Returns a plain result (never throws for handler errors) so the proxy can tell input errors,
 * upstream problems and crashes apart.
 */
import type { HandlerContext, HandlerInputError, HandlerModule, HandlerUpstreamError } from './handler-contract.js'
import { importHandler } from './import-handler.js'
import { runWithTaskSignal } from './task-signal.js'

export interface PoolTask {
  /** the handler module file */
  file: string
  slug: string
  input: unknown
  ctx: HandlerContext
  /**
   * epoch ms past which the call is abandoned (I/O lane, set by the pool on this machine): its task signal aborts, so its outbound
   * requests end now rather than at their own timeouts (see task-signal.ts)
   */
  deadline?: number
}

export type PoolResult =
  | { kind: 'ok'; status: number; contentType: string; body: Uint8Array | string }
  | { kind: 'input'; status: number; field: string; message: string }
  | { kind: 'upstream'; code: 'upstream_not_configured' | 'upstream_failed'; message: string }
  | { kind: 'error'; message: string }
  /** the call ended after its deadline, aborted or not: the caller answers it as a timeout */
  | { kind: 'expired' }

const modules = new Map<string, Promise<HandlerModule>>()
let tsLoader: Promise<unknown> | undefined

/**
 * Running from source under `node --import tsx`, worker threads do not inherit the TypeScript
 * loader (nor does a process started without it); register it on the first "unknown .ts extension" (a test runner's own loader may already be there).
 */
async function importWithTsFallback(file: string, slug: string): Promise<HandlerModule> {
  try {
    return await importHandler(file, slug)
  } catch (err) {
    if ((err as { code?: string }).code !== 'ERR_UNKNOWN_FILE_EXTENSION') throw err
    tsLoader ??= import('tsx/esm/api').then((m) => m.register())
    await tsLoader
    // the failed load is cached per URL; a suffix makes it a fresh one
    return importHandler(file, slug, '?ts')
  }
}

export async function runTask(task: PoolTask): Promise<PoolResult> {
  let mod = modules.get(task.file)
  if (!mod) {
    mod = importWithTsFallback(task.file, task.slug)
    modules.set(task.file, mod)
  }
  if (task.deadline !== undefined) return runUntil(mod, task, task.deadline)
  return runOnce(mod, task)
}

async function runOnce(mod: Promise<HandlerModule>, task: PoolTask): Promise<PoolResult> {
  try {
    const m = await mod
    const r = await m.run(task.input, task.ctx)
    const contentType = r.contentType ?? m.output.contentType
    const status = r.status ?? 200
    if (r.body instanceof Uint8Array) return { kind: 'ok', status, contentType, body: r.body }
    if (typeof r.body === 'string') return { kind: 'ok', status, contentType, body: r.body }
    return {
      kind: 'ok',
      status,
      contentType: contentType.includes('json') ? contentType : 'application/json',
      body: JSON.stringify(r.body),
    }
  } catch (err) {
    // Recognised by name, not instanceof: running from source, a handler imported through the
    // fallback loader below gets its own copy of handler-contract, so its error classes are not
    // this module's (every input error was answered as a crash under `npm start`).
    const e = err as Partial<HandlerInputError & HandlerUpstreamError> | null
    if (e?.name === 'HandlerInputError' && typeof e.field === 'string')
      return { kind: 'input', status: e.statusCode ?? 400, field: e.field, message: e.message ?? '' }
    if (e?.name === 'HandlerUpstreamError' && (e.code === 'upstream_not_configured' || e.code === 'upstream_failed'))
      return { kind: 'upstream', code: e.code, message: e.message ?? '' }
    // the message may be internal; the proxy logs it and answers a generic handler_failed
    return { kind: 'error', message: (err as Error)?.message ?? String(err) }
  }
}

/**
 * Runs the call with a task signal that aborts at `deadline` (outbound.ts follows it). Whatever
 * a call past its deadline returns is `expired`: the proxy has answered, or is about to answer,
 * a timeout, and the two threads' timers must not race to different answers.
 */
async function runUntil(mod: Promise<HandlerModule>, task: PoolTask, deadline: number): Promise<PoolResult> {
  const ac = new AbortController()
  const timer = setTimeout(
    () => ac.abort(new DOMException('the call ran past its time limit', 'TimeoutError')),
    Math.max(0, deadline - Date.now()),
  )
  try {
    const r = await runWithTaskSignal(ac.signal, () => runOnce(mod, task))
    return ac.signal.aborted ? { kind: 'expired' } : r
  } finally {
    clearTimeout(timer)
  }
}

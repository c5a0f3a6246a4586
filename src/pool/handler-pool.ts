import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { Piscina } from 'piscina'
import type { HandlerContext } from './handler-contract.js'
import type { PoolResult, PoolTask } from './worker.js'

export type PoolOutcome = PoolResult | { kind: 'timeout'; timeoutMs: number } | { kind: 'crashed'; message: string } | { kind: 'busy'; queued: number }

export interface HandlerPool {
  run(handler: { file: string; slug: string }, input: unknown, ctx: HandlerContext, timeoutMs: number): Promise<PoolOutcome>
  close(): Promise<void>
  readonly threads: number
}

// Options a pool worker needs from its parent: how modules load (tsx when running from source).
const WORKER_OPTIONS_WITH_VALUE = new Set(['--import', '--require', '-r', '--loader', '--experimental-loader', '--conditions', '-C'])
const WORKER_OPTION_RE = /^(--(import|require|loader|experimental-loader|conditions)=|--enable-source-maps$|--no-warnings$|--experimental-)/

/**
 * The parent's options a Worker accepts and needs. V8 flags and process-wide options (such as the
 * `--v8-pool-size=1 --heap-growing-percent=300` the Procfile starts web and proxy with) make
 * `new Worker` throw ERR_WORKER_INVALID_EXEC_ARGV; they already apply to the whole process.
 */
export function workerExecArgv(parent: readonly string[]): string[] {
  const out: string[] = []
  for (let i = 0; i < parent.length; i++) {
    const a = parent[i]!
    if (WORKER_OPTIONS_WITH_VALUE.has(a) && i + 1 < parent.length) out.push(a, parent[++i]!)
    else if (WORKER_OPTION_RE.test(a)) out.push(a)
    // a dropped option given as `--flag value`: its value goes with it
    else if (!a.includes('=') && i + 1 < parent.length && !parent[i + 1]!.startsWith('-')) i++
  }
  return out
}

/**
 * The worker module `name` beside the module at `fromUrl` (its `import.meta.url`): the .ts source
 * when running from source, the compiled .js under dist/.
 */
export function workerModule(fromUrl: string, name: string): string {
  const ts = fileURLToPath(new URL(`./${name}.ts`, fromUrl))
  return existsSync(ts) ? ts : fileURLToPath(new URL(`./${name}.js`, fromUrl))
}

/**
 * A Piscina pool for hosted handlers. A task that overruns its time is aborted, which terminates
 * its worker thread (Piscina replaces it); a worker over its heap limit dies the same way. Either
 * way only that request fails.
 */
/**
 * `maxQueue` bounds the calls waiting for a free worker: past it a call is answered `busy` at once
 * instead of waiting out its timeout (which counts from dispatch, queue time included).
 */
export function createHandlerPool(opts: { maxThreads: number; memoryMb: number; maxQueue?: number }): HandlerPool {
  const make = () => new Piscina({
    filename: workerModule(import.meta.url, 'worker'),
    minThreads: 1,
    maxThreads: opts.maxThreads,
    idleTimeout: 60_000,
    resourceLimits: { maxOldGenerationSizeMb: opts.memoryMb, maxYoungGenerationSizeMb: Math.min(64, opts.memoryMb / 4), stackSizeMb: 8 },
    // workers inherit --import tsx when running from source
    execArgv: workerExecArgv(process.execArgv),
  })
  let pool = make()
  // counted here rather than with Piscina's maxQueue, which does not hold for tasks given a signal
  const capacity = opts.maxThreads + (opts.maxQueue ?? 512)
  let outstanding = 0
  return {
    threads: opts.maxThreads,
    async run(handler, input, ctx, timeoutMs) {
      if (outstanding >= capacity) return { kind: 'busy', queued: outstanding - opts.maxThreads }
      outstanding++
      const ac = new AbortController()
      const timer = setTimeout(() => ac.abort(), timeoutMs)
      try {
        return (await pool.run({ file: handler.file, slug: handler.slug, input, ctx } satisfies PoolTask, { signal: ac.signal })) as PoolResult
      } catch (err) {
        if (ac.signal.aborted) return { kind: 'timeout', timeoutMs }
        const message = (err as Error)?.message ?? String(err)
        if (/memory limit|terminated/i.test(message)) {
          // After a worker dies of its heap limit Piscina can leave queued tasks waiting forever;
          // start a fresh pool for new work and let the old one finish what it still runs.
          const old = pool
          pool = make()
          setTimeout(() => void old.destroy().catch(() => {}), timeoutMs).unref()
        }
        return { kind: 'crashed', message }
      } finally {
        outstanding--
        clearTimeout(timer)
      }
    },
    close: () => pool.destroy(),
  }
}

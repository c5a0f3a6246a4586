import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { Piscina } from 'piscina'
import type { HandlerContext } from './handler-contract.js'
import type { PoolResult, PoolTask } from './worker.js'

export type PoolOutcome = Exclude<PoolResult, { kind: 'expired' }> | { kind: 'timeout'; timeoutMs: number } | { kind: 'crashed'; message: string } | { kind: 'busy'; queued: number }

export interface HandlerPool {
  /** `io: true` runs the call in the I/O lane (handlers that mostly wait on the network) */
  run(handler: { file: string; slug: string; io?: boolean }, input: unknown, ctx: HandlerContext, timeoutMs: number): Promise<PoolOutcome>
  close(): Promise<void>
  readonly threads: number
}

export interface HandlerPoolOptions {
  /** threads of the compute lane: one call at a time each */
  maxThreads: number
  memoryMb: number
  /** calls that may wait for a free slot, per lane */
  maxQueue?: number
  /** threads of the I/O lane (default 1), started at its first call */
  ioThreads?: number
  /** calls one I/O-lane thread runs at once (default 32) */
  ioConcurrency?: number
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
 * The Piscina pools for hosted handlers, in two lanes:
 *
 * - **compute** (`maxThreads` threads, one call at a time each): a call that overruns its time is
 *   aborted, which terminates its worker thread (Piscina replaces it); a worker over its heap
 *   limit dies the same way. Either way only that request fails.
 * - **I/O** (`ioThreads` threads, `ioConcurrency` calls at once each), for handlers that mostly
 *   wait on a provider or a public host (`network: true` or `providers` in their module). Without
 *   it a few slow provider calls would hold every compute thread and stall the whole catalogue.
 *   Past its time a call is answered `timeout` and its outbound requests are aborted
 *   (handlers/_shared/outbound.ts follows the task signal); should one still run at twice its
 *   time, the lane gets fresh threads and the calls sharing the old one fail with it (answered
 *   `crashed`, never charged).
 *
 * `maxQueue` bounds the calls waiting in each lane: past it a call is answered `busy` at once
 * instead of waiting out its timeout (which counts from dispatch, queue time included).
 */
export function createHandlerPool(opts: HandlerPoolOptions): HandlerPool {
  const compute = lane(opts, { threads: opts.maxThreads, perThread: 1, minThreads: 1 })
  let io: Lane | undefined
  const ioLane = () => (io ??= lane(opts, { threads: opts.ioThreads ?? 1, perThread: opts.ioConcurrency ?? 32, minThreads: 1 }))
  return {
    threads: opts.maxThreads,
    run: (handler, input, ctx, timeoutMs) => (handler.io ? ioLane() : compute).run({ file: handler.file, slug: handler.slug, input, ctx }, timeoutMs),
    close: async () => {
      await Promise.all([compute.close(), io?.close()])
    },
  }
}

interface Lane {
  run(task: PoolTask, timeoutMs: number): Promise<PoolOutcome>
  close(): Promise<void>
}

function lane(opts: HandlerPoolOptions, shape: { threads: number; perThread: number; minThreads: number }): Lane {
  const make = () => new Piscina({
    filename: workerModule(import.meta.url, 'worker'),
    minThreads: shape.minThreads,
    maxThreads: shape.threads,
    concurrentTasksPerWorker: shape.perThread,
    // Piscina's default 'sync' blocks an idle worker's event loop in Atomics.wait, which would
    // stall calls still waiting on the network; the compute lane keeps it (measured faster)
    atomics: shape.perThread > 1 ? 'async' : 'sync',
    idleTimeout: 60_000,
    resourceLimits: { maxOldGenerationSizeMb: opts.memoryMb, maxYoungGenerationSizeMb: Math.min(64, opts.memoryMb / 4), stackSizeMb: 8 },
    // workers inherit --import tsx when running from source
    execArgv: workerExecArgv(process.execArgv),
  })
  let pool = make()
  // counted here rather than with Piscina's maxQueue, which does not hold for tasks given a signal
  const slots = shape.threads * shape.perThread
  const capacity = slots + (opts.maxQueue ?? 512)
  let outstanding = 0
  const inflight = new Set<Promise<PoolOutcome>>()
  /** new work goes to a fresh pool; the old one is destroyed once its other calls had their time */
  const recycle = (old: Piscina, graceMs: number) => {
    if (old !== pool) return // already replaced (several calls of one dead thread report it)
    pool = make()
    setTimeout(() => void old.destroy().catch(() => {}), graceMs).unref()
  }
  return {
    async run(task, timeoutMs) {
      if (outstanding >= capacity) return { kind: 'busy', queued: outstanding - slots }
      outstanding++
      if (shape.perThread > 1) {
        const { first, done } = runShared(task, timeoutMs)
        // the slot stays taken until the call really ends, even after a timeout answer
        inflight.add(done)
        void done.finally(() => {
          outstanding--
          inflight.delete(done)
        })
        return first
      }
      const ac = new AbortController()
      const timer = setTimeout(() => ac.abort(), timeoutMs)
      const current = pool
      try {
        return (await current.run(task, { signal: ac.signal })) as PoolOutcome
      } catch (err) {
        if (ac.signal.aborted) return { kind: 'timeout', timeoutMs }
        const message = (err as Error)?.message ?? String(err)
        // After a worker dies of its heap limit Piscina can leave queued tasks waiting forever.
        if (/memory limit|terminated/i.test(message)) recycle(current, timeoutMs)
        return { kind: 'crashed', message }
      } finally {
        outstanding--
        clearTimeout(timer)
      }
    },
    async close() {
      // calls already answered `timeout` may still be finishing: a bounded wait, then the threads go
      await Promise.race([Promise.allSettled([...inflight]), new Promise((r) => setTimeout(r, 5_000).unref())])
      await pool.destroy()
    },
  }

  /**
   * A thread running an abortable Piscina task takes no other task, so shared (I/O) threads get
   * no Piscina signal: past its time the caller is answered `timeout` at once, and the worker
   * aborts the call's outbound requests (its task signal, see task-signal.ts), which ends a call
   * built on handlers/_shared/outbound.ts. The call keeps its slot until it really ends; one
   * still running at twice its time recycles the lane.
   */
  function runShared(task: PoolTask, timeoutMs: number): { first: Promise<PoolOutcome>; done: Promise<PoolOutcome> } {
    const current = pool
    // the worker aborts the call's outbound requests at its deadline, which frees the slot
    const running = current.run({ ...task, deadline: Date.now() + timeoutMs }) as Promise<PoolResult>
    let timer: NodeJS.Timeout | undefined
    let stuck: NodeJS.Timeout | undefined
    const late = new Promise<PoolOutcome>((resolve) => {
      timer = setTimeout(() => {
        resolve({ kind: 'timeout', timeoutMs })
        stuck = setTimeout(() => recycle(current, timeoutMs), timeoutMs)
        stuck.unref()
      }, timeoutMs)
    })
    const done = running.then(
      (r): PoolOutcome => (r.kind === 'expired' ? { kind: 'timeout', timeoutMs } : r),
      (err): PoolOutcome => {
        const message = (err as Error)?.message ?? String(err)
        if (/memory limit|terminated/i.test(message)) recycle(current, timeoutMs)
        return { kind: 'crashed', message }
      },
    )
    void done.then(() => {
      clearTimeout(timer)
      clearTimeout(stuck)
    })
    return { first: Promise.race([done, late]), done }
  }
}

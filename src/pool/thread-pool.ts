import { Piscina } from 'piscina'
import type { HandlerPool, HandlerPoolOptions, PoolOutcome } from './handler-pool.js'
import { workerExecArgv, workerModule } from './worker-options.js'
import type { PoolResult, PoolTask } from './run-task.js'

/**
 * Hosted handlers on worker threads of the proxy's own process: the pool before process isolation
 * (process-pool.ts), kept so `bench:proxy` can measure what the process boundary costs. No role
 * uses it: a V8 fatal error, a native crash or `process.exit()` in a handler ends the whole
 * process, which no worker thread can contain.
 *
 * Two lanes:
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
export function createThreadPool(opts: HandlerPoolOptions): HandlerPool {
  const compute = new Lane(opts, { threads: opts.maxThreads, perThread: 1, minThreads: 1 })
  let io: Lane | undefined
  const ioLane = () =>
    (io ??= new Lane(opts, { threads: opts.ioThreads ?? 1, perThread: opts.ioConcurrency ?? 32, minThreads: 1 }))
  return {
    run: (handler, input, ctx, timeoutMs) =>
      (handler.io ? ioLane() : compute).run({ file: handler.file, slug: handler.slug, input, ctx }, timeoutMs),
    close: async () => {
      await Promise.all([compute.close(), io?.close()])
    },
  }
}

/** How a lane's threads are shaped: how many, how many calls at once each, how many kept idle. */
interface LaneShape {
  threads: number
  perThread: number
  minThreads: number
}

/** One Piscina pool with a bounded queue; replaced by a fresh one when a thread dies badly. */
class Lane {
  private pool: Piscina
  /** calls that can run at once */
  private readonly slots: number
  /** calls running or waiting; past it a call is answered `busy` */
  private readonly capacity: number
  // counted here rather than with Piscina's maxQueue, which does not hold for tasks given a signal
  private outstanding = 0
  private readonly inflight = new Set<Promise<PoolOutcome>>()

  constructor(
    private readonly opts: HandlerPoolOptions,
    private readonly shape: LaneShape,
  ) {
    this.pool = this.make()
    this.slots = shape.threads * shape.perThread
    this.capacity = this.slots + (opts.maxQueue ?? 512)
  }

  private make(): Piscina {
    const { opts, shape } = this
    return new Piscina({
      filename: workerModule(import.meta.url, 'worker'),
      minThreads: shape.minThreads,
      maxThreads: shape.threads,
      concurrentTasksPerWorker: shape.perThread,
      // Piscina's default 'sync' blocks an idle worker's event loop in Atomics.wait, which would
      // stall calls still waiting on the network; the compute lane keeps it (measured faster)
      atomics: shape.perThread > 1 ? 'async' : 'sync',
      idleTimeout: 60_000,
      resourceLimits: {
        maxOldGenerationSizeMb: opts.memoryMb,
        maxYoungGenerationSizeMb: Math.min(64, opts.memoryMb / 4),
        stackSizeMb: 8,
      },
      // workers inherit --import tsx when running from source
      execArgv: workerExecArgv(process.execArgv),
    })
  }

  /** new work goes to a fresh pool; the old one is destroyed once its other calls had their time */
  private recycle(old: Piscina, graceMs: number): void {
    if (old !== this.pool) return // already replaced (several calls of one dead thread report it)
    this.pool = this.make()
    setTimeout(() => void old.destroy().catch(() => {}), graceMs).unref()
  }

  async run(task: PoolTask, timeoutMs: number): Promise<PoolOutcome> {
    if (this.outstanding >= this.capacity) return { kind: 'busy', queued: this.outstanding - this.slots }
    this.outstanding++
    if (this.shape.perThread > 1) return this.runShared(task, timeoutMs)
    return this.runExclusive(task, timeoutMs)
  }

  /** A call on a thread of its own: aborted at its time, which ends the thread (Piscina replaces it). */
  private async runExclusive(task: PoolTask, timeoutMs: number): Promise<PoolOutcome> {
    const ac = new AbortController()
    const timer = setTimeout(() => ac.abort(), timeoutMs)
    const current = this.pool
    try {
      return (await current.run(task, { signal: ac.signal })) as PoolOutcome
    } catch (err) {
      if (ac.signal.aborted) return { kind: 'timeout', timeoutMs }
      const message = (err as Error)?.message ?? String(err)
      // After a worker dies of its heap limit Piscina can leave queued tasks waiting forever.
      if (/memory limit|terminated/i.test(message)) this.recycle(current, timeoutMs)
      return { kind: 'crashed', message }
    } finally {
      this.outstanding--
      clearTimeout(timer)
    }
  }

  private runShared(task: PoolTask, timeoutMs: number): Promise<PoolOutcome> {
    const { first, done } = this.startShared(task, timeoutMs)
    // the slot stays taken until the call really ends, even after a timeout answer
    this.inflight.add(done)
    void done.finally(() => {
      this.outstanding--
      this.inflight.delete(done)
    })
    return first
  }

  /**
   * A thread running an abortable Piscina task takes no other task, so shared (I/O) threads get
   * no Piscina signal: past its time the caller is answered `timeout` at once, and the worker
   * aborts the call's outbound requests (its task signal, see task-signal.ts), which ends a call
   * built on handlers/_shared/outbound.ts. The call keeps its slot until it really ends; one
   * still running at twice its time recycles the lane.
   */
  private startShared(task: PoolTask, timeoutMs: number): { first: Promise<PoolOutcome>; done: Promise<PoolOutcome> } {
    const current = this.pool
    // the worker aborts the call's outbound requests at its deadline, which frees the slot
    const running = current.run({ ...task, deadline: Date.now() + timeoutMs }) as Promise<PoolResult>
    let timer: NodeJS.Timeout | undefined
    let stuck: NodeJS.Timeout | undefined
    const late = new Promise<PoolOutcome>((resolve) => {
      timer = setTimeout(() => {
        resolve({ kind: 'timeout', timeoutMs })
        stuck = setTimeout(() => this.recycle(current, timeoutMs), timeoutMs)
        stuck.unref()
      }, timeoutMs)
    })
    const done = running.then(
      (r): PoolOutcome => (r.kind === 'expired' ? { kind: 'timeout', timeoutMs } : r),
      (err): PoolOutcome => {
        const message = (err as Error)?.message ?? String(err)
        if (/memory limit|terminated/i.test(message)) this.recycle(current, timeoutMs)
        return { kind: 'crashed', message }
      },
    )
    void done.then(() => {
      clearTimeout(timer)
      clearTimeout(stuck)
    })
    return { first: Promise.race([done, late]), done }
  }

  async close(): Promise<void> {
    // calls already answered `timeout` may still be finishing: a bounded wait, then the threads go
    await Promise.race([Promise.allSettled([...this.inflight]), new Promise((r) => setTimeout(r, 5_000).unref())])
    await this.pool.destroy()
  }
}

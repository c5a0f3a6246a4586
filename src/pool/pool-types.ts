/**
 * The handler pool's contract (its implementations: process-pool.ts, thread-pool.ts, remote-pool.ts),
 * apart from handler-pool.ts, which builds one: the pools import it without importing their builder.
 */
import type { HandlerContext } from './handler-contract.js'
import type { PoolResult } from './run-task.js'

export type PoolOutcome =
  | Exclude<PoolResult, { kind: 'expired' }>
  | { kind: 'timeout'; timeoutMs: number }
  /** `message` is internal (logged); `detail`, when set, is safe to show the buyer */
  | { kind: 'crashed'; message: string; detail?: string }
  | { kind: 'busy'; queued: number }

/**
 * Where the proxy runs hosted handler calls: handler processes it supervises itself
 * (process-pool.ts), the `handlers` role (remote-pool.ts), or, for comparison only, its own
 * worker threads (thread-pool.ts).
 */
export interface HandlerPool {
  /** `io: true` runs the call in the I/O lane (handlers that mostly wait on the network) */
  run(
    handler: { file: string; slug: string; io?: boolean },
    input: unknown,
    ctx: HandlerContext,
    timeoutMs: number,
  ): Promise<PoolOutcome>
  close(): Promise<void>
}

export interface HandlerPoolOptions {
  /** compute lane: this many handler processes (threads in the thread pool), one call at a time each */
  maxThreads: number
  /** V8 heap limit (old generation) of each handler process or thread */
  memoryMb: number
  /** calls that may wait for a free slot, per lane */
  maxQueue?: number
  /** I/O lane: this many handler processes (default 1), started at its first call */
  ioThreads?: number
  /** calls one I/O-lane process runs at once (default 32) */
  ioConcurrency?: number
  /** resident memory (heap, buffers, native) past which a handler process is stopped (default 1536) */
  rssMb?: number
  /** told when a handler process ends unasked (a crash, a limit), with what happened */
  log?: (message: string) => void
}

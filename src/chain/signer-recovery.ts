import { performance } from 'node:perf_hooks'
import { Piscina } from 'piscina'
import { groupCommit } from '../db/group-commit.js'
import { workerExecArgv, workerModule } from '../pool/handler-pool.js'
import { recoverAuthorizer, type RecoveredSigner } from './recover-signer.js'
import type { RecoverBatch } from './recover-worker.js'

export interface SignerRecovery {
  /** the signer of `digest`, as `recoverAuthorizer` returns it; never rejects */
  recover(digest: Uint8Array, signature: string): Promise<RecoveredSigner>
  close(): Promise<void>
  /** recovery threads (0: on the calling thread) */
  readonly threads: number
  /**
   * counters since start: batches sent to a worker, signatures recovered there, recovered here
   * because the event loop had time, recovered here after a worker failed
   */
  readonly stats: { batches: number; recoveredInWorker: number; recoveredInline: number; recoveredAfterFailure: number }
}

/** When to hand recovery to the workers: `busy` (default) while the event loop is busy, `always` for tests. */
export type OffloadMode = 'busy' | 'always'

// a 65-byte signature as 0x-hex: the only kind that costs an elliptic-curve recovery
const EOA_SIGNATURE_LENGTH = 132

// the event loop's utilization is sampled this often; above ON it offloads, below OFF it stops
const SAMPLE_MS = 100
const BUSY_ON = 0.8
const BUSY_OFF = 0.5

/**
 * Signature recovery off the event loop when it is busy. Recovery (native secp256k1) is the largest
 * single cost of a paid call on the proxy's main thread; with `threads` > 0 it runs on worker
 * threads while the event loop is over 80% busy, so the main thread only decodes, checks and answers
 * while another core recovers. Signatures that arrive in the same turn travel together, one message
 * per batch. Below 50% busy it recovers inline again: a hop to a thread is not free (about a
 * millisecond under load), and a quiet proxy has the time.
 *
 * The result is the same as `recoverAuthorizer` on the calling thread; if a worker fails, its batch
 * is recovered on the calling thread instead (nothing is refused for an internal reason). Malformed
 * and smart-wallet signatures are answered at once without a hop. `threads: 0` recovers inline.
 *
 * @example
 *   const recovery = createSignerRecovery({ threads: 1 })
 *   const signer = await recovery.recover(transferAuthDigest(ds, auth), payload.signature)
 */
export function createSignerRecovery(opts: {
  threads: number
  offload?: OffloadMode
  /** tests only: another worker module */ workerFile?: string
}): SignerRecovery {
  const stats = { batches: 0, recoveredInWorker: 0, recoveredInline: 0, recoveredAfterFailure: 0 }
  const here = (digest: Uint8Array, signature: string) => {
    stats.recoveredInline++
    return Promise.resolve(recoverAuthorizer(digest, signature))
  }
  if (opts.threads <= 0) return { threads: 0, stats, recover: here, close: async () => {} }

  let offload = opts.offload === 'always'
  let sampler: NodeJS.Timeout | undefined
  if (opts.offload !== 'always') {
    let last = performance.eventLoopUtilization()
    sampler = setInterval(() => {
      const now = performance.eventLoopUtilization()
      const busy = performance.eventLoopUtilization(now, last).utilization
      last = now
      offload = offload ? busy > BUSY_OFF : busy > BUSY_ON
    }, SAMPLE_MS).unref()
  }

  const pool = new Piscina({
    filename: opts.workerFile ?? workerModule(import.meta.url, 'recover-worker'),
    minThreads: opts.threads,
    maxThreads: opts.threads,
    idleTimeout: Number.MAX_SAFE_INTEGER,
    // workers inherit --import tsx when running from source
    execArgv: workerExecArgv(process.execArgv),
  })
  // after a worker failure, recover here for a second rather than wait on a replacement that may fail too
  let workerFailedAt = -Infinity
  const inline = (items: { digest: Uint8Array; signature: string }[]) => {
    stats.recoveredAfterFailure += items.length
    return items.map((i) => recoverAuthorizer(i.digest, i.signature))
  }
  const batches = groupCommit<{ digest: Uint8Array; signature: string }, RecoveredSigner>({
    maxItems: 64,
    // two batches per thread: one being recovered, one on its way
    maxInFlight: opts.threads * 2,
    maxPending: 64 * 64,
    async flush(items) {
      if (performance.now() - workerFailedAt < 1000) return inline(items)
      const digests = new Uint8Array(items.length * 32)
      for (let i = 0; i < items.length; i++) digests.set(items[i]!.digest, i * 32)
      stats.batches++
      try {
        const out = (await pool.run({
          digests,
          signatures: items.map((i) => i.signature),
        } satisfies RecoverBatch)) as RecoveredSigner[]
        if (Array.isArray(out) && out.length === items.length) {
          stats.recoveredInWorker += out.length
          return out
        }
      } catch {
        // a worker died (it is replaced) or the pool is closed: this batch is recovered here
      }
      workerFailedAt = performance.now()
      return inline(items)
    },
  })
  return {
    threads: opts.threads,
    stats,
    recover(digest, signature) {
      if (!offload || typeof signature !== 'string' || signature.length !== EOA_SIGNATURE_LENGTH)
        return here(digest, signature)
      return batches.add({ digest, signature }).catch(() => recoverAuthorizer(digest, signature))
    },
    close: () => {
      clearInterval(sampler)
      return pool.destroy()
    },
  }
}

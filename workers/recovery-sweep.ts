import type { JobModule } from './job.js'

/**
 * Resolves what a crash or a Redis flush left behind: pending batches from receipts, stuck
 * `settling` payments from authorizationState, `verified` payments the proxy never finished.
 * `served` payments need nothing: the tick claims them from Postgres.
 */
export const name = 'recovery-sweep'
export type Payload = Record<string, never>

export const recoverySweep: JobModule<Payload> = {
  name,
  defaultOptions: { attempts: 1, removeOnComplete: 50, removeOnFail: 50 },
  everyMs: () => 30_000,
  process: ({ settler }) => settler.sweep(),
}

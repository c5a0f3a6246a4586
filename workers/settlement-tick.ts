import type { JobModule } from './job.js'

/** The batch loop: every batch window, settle whatever is `served` (no per-request jobs). */
export const name = 'settlement-tick'
export type Payload = Record<string, never>

export const settlementTick: JobModule<Payload> = {
  name,
  defaultOptions: { attempts: 1, removeOnComplete: 100, removeOnFail: 100 },
  everyMs: (deps) => deps.config.settlement.batchWindowMs,
  process: ({ settler }) => settler.runOnce(20_000),
}

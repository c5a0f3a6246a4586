import type { JobModule } from './job.js'

/** Sends the pending withdrawals no web process finished (it died, or a relayer was busy) and retries failed attempts (docs/api.md, "Withdrawals"). */
export const name = 'withdrawal-sweep'
export type Payload = Record<string, never>

export const withdrawalSweep: JobModule<Payload> = {
  name,
  defaultOptions: { attempts: 1, removeOnComplete: 20, removeOnFail: 20 },
  everyMs: () => 5_000,
  // the process's service (its relayer accounts and locks), reporting in the worker's log
  process: ({ deps, log }) => deps.services.withdrawals.withLogger(log).processDue(),
}

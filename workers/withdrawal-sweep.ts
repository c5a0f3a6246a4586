import type { Deps } from '../src/deps.js'
import { createWithdrawals, type Withdrawals } from '../src/services/withdrawals/withdrawals.js'
import type { JobModule } from './job.js'

/** Sends the pending withdrawals no web process finished (it died, or a relayer was busy) and retries failed attempts (docs/api.md, "Withdrawals"). */
export const name = 'withdrawal-sweep'
export type Payload = Record<string, never>

// one service per process's deps: it holds the relayer accounts
const services = new WeakMap<Deps, Withdrawals>()

export const withdrawalSweep: JobModule<Payload> = {
  name,
  defaultOptions: { attempts: 1, removeOnComplete: 20, removeOnFail: 20 },
  everyMs: () => 5_000,
  process: ({ deps, log }) => {
    let s = services.get(deps)
    if (!s) services.set(deps, (s = createWithdrawals(deps, { logger: log })))
    return s.processDue()
  },
}

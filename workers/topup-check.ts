import type { Queue } from 'bullmq'
import type { Deps } from '../src/deps.js'
import { createTopups, type Topups } from '../src/services/topups/topups.js'
import type { JobModule } from './job.js'

/** Opens top-up needs for agents below their threshold and pays the due ones (docs/topups.md). */
export const name = 'topup-check'
export type Payload = Record<string, never>

// one service per process's deps: it holds the relayer accounts
const services = new WeakMap<Deps, Topups>()

export const topupCheck: JobModule<Payload> = {
  name,
  defaultOptions: { attempts: 1, removeOnComplete: 20, removeOnFail: 20 },
  everyMs: () => 30_000,
  process: ({ deps, log }) => {
    let s = services.get(deps)
    // the worker's logger: a failed top-up is reported at error level (docs/topups.md)
    if (!s) services.set(deps, (s = createTopups(deps, { logger: log })))
    return s.runOnce()
  },
}

/**
 * Asks for a check now (e.g. after payments settle); calls within `windowMs` collapse into one job.
 *
 * @example
 *   await requestTopupCheck(settlementQueue(config, conn))
 */
export async function requestTopupCheck(queue: Queue, windowMs = 2_000): Promise<void> {
  await queue.add(name, {}, { ...topupCheck.defaultOptions, deduplication: { id: name, ttl: windowMs } })
}

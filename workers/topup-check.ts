import type { Queue } from 'bullmq'
import type { JobModule } from './job.js'

/** Opens top-up needs for agents below their threshold and pays the due ones (docs/topups.md). */
export const name = 'topup-check'
export type Payload = Record<string, never>

export const topupCheck: JobModule<Payload> = {
  name,
  defaultOptions: { attempts: 1, removeOnComplete: 20, removeOnFail: 20 },
  everyMs: () => 30_000,
  // the process's service (its relayer accounts and locks); the worker's logger, so a failed
  // top-up is reported at error level in the worker log (docs/topups.md)
  process: ({ deps, log }) => deps.services.topups.withLogger(log).runOnce(),
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

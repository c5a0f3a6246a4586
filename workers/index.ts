import type { Deps } from '../src/deps.js'

export interface RunningWorkers {
  close(): Promise<void>
}

/** Starts every BullMQ worker and repeatable job of this deployment; close() drains them. */
export async function startWorkers(deps: Deps): Promise<RunningWorkers> {
  const closers: Array<() => Promise<void>> = []
  void deps
  return {
    async close() {
      await Promise.allSettled(closers.map((c) => c()))
    },
  }
}

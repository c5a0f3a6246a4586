import type { Deps } from '../src/deps.js'
import { DeferredCollector } from '../src/services/deferred-collect/collector.js'
import { deferredCrashHooksFromEnv } from '../src/services/deferred-collect/test-hooks.js'
import type { JobContext, JobModule } from './job.js'

/**
 * Collects the `deferred` scheme's vouchers: every DEFERRED_COLLECT_EVERY_MS, each seller whose
 * uncollected calls reach DEFERRED_COLLECT_THRESHOLD or DEFERRED_COLLECT_MAX_AGE_SECONDS gets one
 * collectMany (src/services/deferred-collect/collector.ts). Nothing to do where no escrow is
 * configured.
 */
export const name = 'deferred-collect'
export type Payload = { force?: boolean }

const collectors = new WeakMap<Deps, DeferredCollector>()

function collectorOf(ctx: Pick<JobContext, 'deps' | 'log'>): DeferredCollector | undefined {
  const escrow = ctx.deps.config.deferredEscrowAddress
  if (!escrow) return undefined
  let c = collectors.get(ctx.deps)
  if (!c) {
    // TOLLGATE_TEST_DEFERRED_CRASH_AT (tests only, refused in production) kills this process mid-collection
    const hooks = deferredCrashHooksFromEnv(process.env, ctx.deps.config)
    c = new DeferredCollector(ctx.deps, { escrow, log: ctx.log, hooks })
    collectors.set(ctx.deps, c)
  }
  return c
}

/**
 * Starts the collector's watch of the escrow's events (a thaw collected at once, not on the next
 * run) in this worker process; the returned close stops it. Nothing where no escrow is configured.
 */
export function startThawWatch(ctx: Pick<JobContext, 'deps' | 'log'>): { close(): Promise<void> } {
  const c = collectorOf(ctx)
  c?.watchThaws()
  return { close: async () => c?.close() }
}

export const deferredCollect: JobModule<Payload> = {
  name,
  // one at a time per run (the scheduler's id); a failed run is the next run's to retry
  defaultOptions: { attempts: 1, removeOnComplete: 100, removeOnFail: 100 },
  everyMs: (deps) => deps.config.deferred.collectEveryMs,
  process: async (ctx, job) => collectorOf(ctx)?.runOnce({ force: job.data?.force === true }) ?? null,
}

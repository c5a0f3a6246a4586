import type { Deps } from '../src/deps.js'
import { BatchClaimer } from '../src/services/batch-claim/claimer.js'
import { batchCrashHooksFromEnv } from '../src/services/batch-claim/test-hooks.js'
import type { JobContext, JobModule } from './job.js'

/**
 * Claims and settles `batch-settlement` channels: every BATCH_CLAIM_EVERY_MS, channels whose
 * unclaimed charge reaches BATCH_CLAIM_THRESHOLD or whose oldest unclaimed call is
 * BATCH_CLAIM_MAX_AGE_SECONDS old, and those whose timed withdrawal started, in one
 * claimWithSignature; then settle per receiver and token (src/services/batch-claim/claimer.ts).
 */
export const name = 'batch-claim'
export type Payload = { force?: boolean }

const claimers = new WeakMap<Deps, BatchClaimer>()

function claimerOf(ctx: Pick<JobContext, 'deps' | 'log'>): BatchClaimer {
  let c = claimers.get(ctx.deps)
  if (!c) {
    // TOLLGATE_TEST_BATCH_CRASH_AT (tests only, refused in production) kills this process mid-claim
    const hooks = batchCrashHooksFromEnv(process.env, ctx.deps.config)
    c = new BatchClaimer(ctx.deps, { log: ctx.log, hooks })
    claimers.set(ctx.deps, c)
  }
  return c
}

export const batchClaim: JobModule<Payload> = {
  name,
  // one at a time per run; a failed run is the next run's to retry
  defaultOptions: { attempts: 1, removeOnComplete: 100, removeOnFail: 100 },
  everyMs: (deps) => deps.config.batchClaim.claimEveryMs,
  process: async (ctx, job) => {
    const stats = await claimerOf(ctx).runOnce({ force: job.data?.force === true })
    return { ...stats, claimed: stats.claimed.toString(), settled: stats.settled.toString() }
  },
}

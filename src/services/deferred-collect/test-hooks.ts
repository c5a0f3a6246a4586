import type { Config } from '../../config.js'

/** Where TOLLGATE_TEST_DEFERRED_CRASH_AT kills the worker: the stages of one seller's collection. */
export const DEFERRED_CRASH_STAGES = ['after-claim', 'after-send'] as const
export type DeferredCrashStage = (typeof DEFERRED_CRASH_STAGES)[number]

/** Called by the collector between the stages of a seller's collection (tests only). */
export interface DeferredCollectHooks {
  /** its payments are claimed (`settling`), nothing sent yet */
  afterClaim?(): Promise<void>
  /** a collectMany was mined; nothing of it recorded yet */
  afterSend?(): Promise<void>
}

/**
 * A test hook for crash recovery: with TOLLGATE_TEST_DEFERRED_CRASH_AT=<stage> the worker process
 * kills itself with SIGKILL (as `kill -9` would: no cleanup, no finally, locks left in Redis) when
 * its first deferred collection reaches that stage. Inert (undefined) when the variable is unset or
 * empty; refused in a production deployment and for an unknown stage.
 *
 * @example
 *   TOLLGATE_TEST_DEFERRED_CRASH_AT=after-send node --import tsx src/start/worker.ts
 */
export function deferredCrashHooksFromEnv(
  env: Record<string, string | undefined>,
  config: Pick<Config, 'deployment'>,
): DeferredCollectHooks | undefined {
  const at = env.TOLLGATE_TEST_DEFERRED_CRASH_AT
  if (at === undefined || at === '') return undefined
  if (config.deployment === 'production')
    throw new Error('TOLLGATE_TEST_DEFERRED_CRASH_AT is a test hook and is refused with TOLLGATE_DEPLOYMENT=production')
  if (!(DEFERRED_CRASH_STAGES as readonly string[]).includes(at))
    throw new Error(`TOLLGATE_TEST_DEFERRED_CRASH_AT: expected one of ${DEFERRED_CRASH_STAGES.join(', ')}`)
  const die = (): Promise<never> => {
    process.kill(process.pid, 'SIGKILL')
    return new Promise<never>(() => {})
  }
  return {
    afterClaim: at === 'after-claim' ? die : undefined,
    afterSend: at === 'after-send' ? die : undefined,
  }
}

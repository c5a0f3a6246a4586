import type { Config } from '../../config.js'
import type { SettlementHooks } from './settler.js'

/** Where TOLLGATE_TEST_CRASH_AT kills the worker: the stages of one batch. */
export const CRASH_STAGES = ['after-claim', 'before-send', 'after-send'] as const
export type CrashStage = (typeof CRASH_STAGES)[number]

/**
 * A test hook for crash recovery: with TOLLGATE_TEST_CRASH_AT=<stage> the worker process kills
 * itself with SIGKILL (as `kill -9` would: no cleanup, no finally, locks left in Redis) when its
 * first batch reaches that stage. Inert (undefined) when the variable is unset or empty; refused in
 * a production deployment and for an unknown stage.
 *
 * @example
 *   TOLLGATE_TEST_CRASH_AT=after-send node --import tsx src/start/worker.ts
 */
export function crashHooksFromEnv(
  env: Record<string, string | undefined>,
  config: Pick<Config, 'deployment'>,
): SettlementHooks | undefined {
  const at = env.TOLLGATE_TEST_CRASH_AT
  if (at === undefined || at === '') return undefined
  if (config.deployment === 'production')
    throw new Error('TOLLGATE_TEST_CRASH_AT is a test hook and is refused with TOLLGATE_DEPLOYMENT=production')
  if (!(CRASH_STAGES as readonly string[]).includes(at))
    throw new Error(`TOLLGATE_TEST_CRASH_AT: expected one of ${CRASH_STAGES.join(', ')}`)
  const die = (): Promise<never> => {
    process.kill(process.pid, 'SIGKILL')
    return new Promise<never>(() => {})
  }
  return {
    afterClaim: at === 'after-claim' ? die : undefined,
    beforeSend: at === 'before-send' ? die : undefined,
    afterSend: at === 'after-send' ? die : undefined,
  }
}

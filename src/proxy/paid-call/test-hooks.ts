import type { Config } from '../../config.js'

/** Where TOLLGATE_TEST_PROXY_CRASH_AT kills the proxy: the points between a paid call's stages. */
export const PROXY_CRASH_STAGES = ['after-reserve', 'after-record', 'after-dispatch', 'after-outcome'] as const
export type ProxyCrashStage = (typeof PROXY_CRASH_STAGES)[number]

/** Called between stages of a paid call (tests only). */
export type PaidCallHooks = Partial<Record<ProxyCrashStage, () => Promise<void>>>

/**
 * A test hook for crash safety: with TOLLGATE_TEST_PROXY_CRASH_AT=<stage> the proxy process kills
 * itself with SIGKILL (as `kill -9` would: nothing flushed, nothing answered) when its first paid
 * call reaches that point:
 *
 * - `after-reserve`: the payment is reserved in Redis, nothing is written;
 * - `after-record`: an upstream call's `verified` row is committed, the upstream not called;
 * - `after-dispatch`: the endpoint answered, its outcome is not written;
 * - `after-outcome`: the outcome (`served` or `voided`) is committed, the answer has not left.
 *
 * Inert (undefined) when unset or empty; refused in a production deployment and for an unknown stage.
 */
export function proxyCrashHooksFromEnv(
  env: Record<string, string | undefined>,
  config: Pick<Config, 'deployment'>,
): PaidCallHooks | undefined {
  const at = env.TOLLGATE_TEST_PROXY_CRASH_AT
  if (at === undefined || at === '') return undefined
  if (config.deployment === 'production')
    throw new Error('TOLLGATE_TEST_PROXY_CRASH_AT is a test hook and is refused with TOLLGATE_DEPLOYMENT=production')
  if (!(PROXY_CRASH_STAGES as readonly string[]).includes(at))
    throw new Error(`TOLLGATE_TEST_PROXY_CRASH_AT: expected one of ${PROXY_CRASH_STAGES.join(', ')}`)
  return {
    [at]: () => {
      process.kill(process.pid, 'SIGKILL')
      return new Promise<never>(() => {})
    },
  }
}

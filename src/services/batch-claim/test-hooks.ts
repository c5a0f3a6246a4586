import type { Config } from '../../config.js'

/** Where TOLLGATE_TEST_BATCH_CRASH_AT kills the worker: the stages of one recorded transaction. */
const BATCH_CRASH_STAGES = ['after-record', 'after-send'] as const

/** Called between the stages of a claim or settle transaction (tests only). */
export interface BatchTxHooks {
  /** the signed transaction is recorded (`pending`), not broadcast */
  afterRecord?(): Promise<void>
  /** it was broadcast; its receipt not yet decided */
  afterSend?(): Promise<void>
}

/**
 * A test hook for crash recovery: with TOLLGATE_TEST_BATCH_CRASH_AT=<stage> the worker process kills
 * itself with SIGKILL (as `kill -9` would: no cleanup, locks left in Redis) when its first
 * batch-settlement claim reaches that stage. Inert when unset or empty; refused in a production
 * deployment and for an unknown stage.
 */
export function batchCrashHooksFromEnv(
  env: Record<string, string | undefined>,
  config: Pick<Config, 'deployment'>,
): BatchTxHooks | undefined {
  const at = env.TOLLGATE_TEST_BATCH_CRASH_AT
  if (at === undefined || at === '') return undefined
  if (config.deployment === 'production')
    throw new Error('TOLLGATE_TEST_BATCH_CRASH_AT is a test hook and is refused with TOLLGATE_DEPLOYMENT=production')
  if (!(BATCH_CRASH_STAGES as readonly string[]).includes(at))
    throw new Error(`TOLLGATE_TEST_BATCH_CRASH_AT: expected one of ${BATCH_CRASH_STAGES.join(', ')}`)
  const die = (): Promise<never> => {
    process.kill(process.pid, 'SIGKILL')
    return new Promise<never>(() => {})
  }
  return {
    afterRecord: at === 'after-record' ? die : undefined,
    afterSend: at === 'after-send' ? die : undefined,
  }
}

import type { EnvReader } from './env-reader.js'
import type { Config } from './types.js'

/** Signed webhooks' timing (Config.webhooks). */
export function webhooksConfig(r: EnvReader): Config['webhooks'] {
  return {
    tickMs: r.int('WEBHOOK_TICK_MS', 1000, 50, 60_000),
    retryBaseMs: r.int('WEBHOOK_RETRY_BASE_MS', 30_000, 10, 3_600_000),
    retryMaxMs: r.int('WEBHOOK_RETRY_MAX_MS', 6 * 3_600_000, 10, 86_400_000),
    giveUpMs: r.int('WEBHOOK_GIVE_UP_MS', 3 * 86_400_000, 100, 30 * 86_400_000),
    deriveLagMs: r.int('WEBHOOK_DERIVE_LAG_MS', 5000, 0, 600_000),
    requestTimeoutMs: r.int('WEBHOOK_REQUEST_TIMEOUT_MS', 10_000, 100, 60_000),
  }
}

import { createAccessGrantStore } from '../src/db/access-grant-store.js'
import { createPaymentIdentifierStore } from '../src/db/payment-identifier-store.js'
import type { JobModule } from './job.js'

/**
 * Resolves what a crash or a Redis flush left behind: pending batches from receipts, stuck
 * `settling` payments from authorizationState, `verified` payments the proxy never finished.
 * `served` payments need nothing: the tick claims them from Postgres. Also deletes x402
 * `payment-identifier` keys past their retention, with the answers they kept, and sign-in-with-x
 * access grants that ran out.
 */
export const name = 'recovery-sweep'
export type Payload = Record<string, never>

export const recoverySweep: JobModule<Payload> = {
  name,
  defaultOptions: { attempts: 1, removeOnComplete: 50, removeOnFail: 50 },
  everyMs: () => 30_000,
  process: async ({ settler, deps }) => {
    const swept = await settler.sweep()
    await createPaymentIdentifierStore(deps.db, deps.config.x402.paymentIds).purgeExpired()
    await createAccessGrantStore(deps.db).purgeExpired()
    return swept
  },
}

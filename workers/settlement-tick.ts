import { sql, type Kysely } from 'kysely'
import type { Database } from '../src/db/database.js'
import type { JobModule } from './job.js'
import { requestTopupCheck } from './topup-check.js'

/**
 * The batch loop: every batch window, settle whatever is `served` (no per-request jobs). When a
 * payment by a platform agent settled, the agent's balance just dropped on chain: ask for a
 * top-up check now instead of waiting for its schedule (requests collapse into one job).
 */
export const name = 'settlement-tick'
export type Payload = Record<string, never>

export const settlementTick: JobModule<Payload> = {
  name,
  defaultOptions: { attempts: 1, removeOnComplete: 100, removeOnFail: 100 },
  everyMs: (deps) => deps.config.settlement.batchWindowMs,
  process: async ({ deps, settler, queue }) => {
    const started = Date.now()
    const stats = await settler.runOnce(20_000)
    // the settler reports counts, not payers: ask Postgres (database clock, so no skew) whether
    // an agent's payment settled during this run; a second of margin covers clock granularity
    if (stats.settled > 0 && queue && (await agentPaymentSettledWithin(deps.db, Date.now() - started + 1_000))) {
      await requestTopupCheck(queue)
    }
    return stats
  },
}

/** Whether a payment whose payer is a platform agent (table `agents`) settled in the last `ms`. */
export async function agentPaymentSettledWithin(db: Kysely<Database>, ms: number): Promise<boolean> {
  // settled is final, so updated_at is the settle time; (status, updated_at) and lower(address) are indexed
  const r = await sql<{ one: number }>`
    select 1 as one from payments p
    where p.status = 'settled' and p.updated_at >= now() - ${`${Math.ceil(ms)} milliseconds`}::interval
      and exists (select 1 from agents a where lower(a.address) = lower(p.payer))
    limit 1`.execute(db)
  return r.rows.length > 0
}

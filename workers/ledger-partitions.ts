import {
  describeOpen,
  dropExpiredPartitions,
  ensureLedgerPartitions,
  pruneExpiredNonces,
} from '../src/ledger/partitions.js'
import type { JobModule } from './job.js'

/**
 * Ledger upkeep (docs/architecture.md, "Partitioned Postgres"): creates the day partitions of
 * payments, payment_events and access_uses LEDGER_PARTITIONS_AHEAD_DAYS ahead (moving any rows the default
 * partitions took into their day), forgets claimed nonces whose authorizations expired, and, when
 * LEDGER_RETENTION_DAYS is set, drops the days older than that unless they still hold payments
 * that are not final (then it names them in the log and drops nothing).
 */
export const name = 'ledger-partitions'
export type Payload = Record<string, never>

export const ledgerPartitions: JobModule<Payload> = {
  name,
  defaultOptions: { attempts: 1, removeOnComplete: 20, removeOnFail: 20 },
  everyMs: () => 10 * 60_000,
  process: async ({ deps, log }) => {
    const { partitionsAheadDays, retentionDays } = deps.config.ledger
    const created = await ensureLedgerPartitions(deps.db, partitionsAheadDays)
    const noncesPruned = await pruneExpiredNonces(deps.db)
    let dropped: string[] = []
    if (retentionDays !== undefined) {
      const r = await dropExpiredPartitions(deps.db, retentionDays)
      dropped = r.dropped
      if (r.refused.length)
        log.warn(
          { partitions: r.refused.map((p) => p.name) },
          `ledger retention: old partitions kept, they hold payments not settled yet: ${describeOpen(r.refused)}`,
        )
      if (dropped.length) log.info({ partitions: dropped }, 'ledger retention: old partitions dropped')
    }
    return { created, noncesPruned, dropped }
  },
}

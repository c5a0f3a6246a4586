import type { Kysely, Selectable } from 'kysely'
import type { AccessUsesTable } from '../db/access-grants-table.js'
import { preparedQuery } from '../db/create-db.js'
import type { Database } from '../db/database.js'
import { groupCommit } from '../db/group-commit.js'

/** A call served on an x402 sign-in-with-x access grant, as the proxy records it (created_at: its transaction's now()). */
export type AccessUse = Omit<Selectable<AccessUsesTable>, 'created_at'>

// one fixed statement over column arrays, prepared once per connection (as the ledger's)
const USES_SQL = `
  insert into access_uses (id, payer, endpoint_id, scope_id, payment_id, resource, method, pay_to)
  select * from unnest($1::uuid[], $2::text[], $3::uuid[], $4::uuid[], $5::uuid[], $6::text[], $7::text[], $8::text[])`

/**
 * The proxy's record of calls served on a sign-in (nothing charged, so nothing for the ledger's
 * statement to claim or guard): group-committed, many calls per transaction, like the ledger's
 * writes but apart from them, and awaited before the answer leaves, so a served sign-in that
 * was answered is on disk; nothing is buffered in memory past that or in Redis.
 */
export function createAccessUseWriter(db: Kysely<Database>, opts: { maxItems?: number; maxInFlight?: number } = {}) {
  const writer = groupCommit<AccessUse, true>({
    maxItems: opts.maxItems ?? 256,
    maxInFlight: opts.maxInFlight ?? 1,
    async flush(uses) {
      const col = <K extends keyof AccessUse>(k: K) => uses.map((u) => u[k])
      await preparedQuery(db, 'tollgate_access_uses_v1', USES_SQL, [
        col('id'),
        col('payer'),
        col('endpoint_id'),
        col('scope_id'),
        col('payment_id'),
        col('resource'),
        col('method'),
        col('pay_to'),
      ])
      return uses.map(() => true as const)
    },
  })
  return {
    /** records one use; resolves once it is committed */
    record: (use: AccessUse): Promise<true> => writer.add(use),
    drain: () => writer.drain(),
  }
}

export type AccessUseWriter = ReturnType<typeof createAccessUseWriter>

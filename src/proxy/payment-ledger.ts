import { sql, type Kysely } from 'kysely'
import type { Database, NewPayment, PaymentStatus } from '../db/database.js'
import { groupCommit } from './group-commit.js'

export type RecordOutcome = 'recorded' | 'duplicate'

/**
 * The proxy's writes to the ledger, group-committed: new payments (with their `verified` event)
 * and the outcome of the call (`served` or `voided`). A paid request proceeds only once its row is
 * committed; the response leaves only once its outcome is committed.
 */
export function paymentLedger(db: Kysely<Database>, opts: { maxItems?: number; maxDelayMs?: number } = {}) {
  const maxItems = opts.maxItems ?? 256
  const maxDelayMs = opts.maxDelayMs ?? 2

  const inserts = groupCommit<NewPayment, RecordOutcome>({
    maxItems,
    maxDelayMs,
    async flush(rows) {
      // One statement: rows whose (payer, nonce) already exists are skipped, not fatal to the batch.
      const result = await sql<{ id: string }>`
        with ins as (
          ${db.insertInto('payments').values(rows).onConflict((oc) => oc.columns(['payer', 'nonce']).doNothing()).returning('id')}
        ), ev as (
          insert into payment_events (payment_id, type, from_status, to_status)
          select id, 'verified', null, 'verified' from ins
        )
        select id from ins`.execute(db)
      const inserted = new Set(result.rows.map((r) => r.id))
      return rows.map((r) => (inserted.has(r.id) ? 'recorded' : 'duplicate'))
    },
  })

  type Outcome = { id: string; to: Extract<PaymentStatus, 'served' | 'voided'>; reason?: string }
  const outcomes = groupCommit<Outcome, boolean>({
    maxItems,
    maxDelayMs,
    async flush(items) {
      const ids = items.map((i) => i.id)
      const tos = items.map((i) => i.to)
      const reasons = items.map((i) => i.reason ?? null)
      // Guarded transition: only a `verified` payment moves; anything else is left as it is.
      const result = await sql<{ id: string }>`
        with input as (
          select * from unnest(${ids}::uuid[], ${tos}::text[], ${reasons}::text[]) as t(id, to_status, reason)
        ), upd as (
          update payments p set status = i.to_status, updated_at = now(),
            failure_reason = case when i.to_status = 'voided' then i.reason else p.failure_reason end
          from input i where p.id = i.id and p.status = 'verified'
          returning p.id, i.to_status, i.reason
        ), ev as (
          insert into payment_events (payment_id, type, from_status, to_status, reason)
          select id, to_status, 'verified', to_status, reason from upd
        )
        select id from upd`.execute(db)
      const moved = new Set(result.rows.map((r) => r.id))
      return items.map((i) => moved.has(i.id))
    },
  })

  return {
    record: (row: NewPayment) => inserts.add(row),
    /** marks a verified payment served (settlement picks it up) or voided (never charged) */
    finish: (id: string, to: Outcome['to'], reason?: string) => outcomes.add({ id, to, reason }),
    async drain() {
      await inserts.drain()
      await outcomes.drain()
    },
  }
}

export type PaymentLedger = ReturnType<typeof paymentLedger>

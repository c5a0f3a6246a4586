import type { Kysely } from 'kysely'
import { preparedQuery } from '../db/create-db.js'
import type { Database, NewPayment, PaymentStatus } from '../db/database.js'
import { groupCommit } from '../db/group-commit.js'

export type RecordOutcome = 'recorded' | 'duplicate'

/** A payment as the proxy records it: always new and `verified`, so nothing settled yet. */
export type NewVerifiedPayment = Omit<NewPayment, 'scheme' | 'tx_hash' | 'failure_reason' | 'settled_at' | 'created_at' | 'updated_at' | 'status'>

type Outcome = { id: string; to: Extract<PaymentStatus, 'served' | 'voided'>; reason?: string }
type Write = { kind: 'record'; row: NewVerifiedPayment } | ({ kind: 'finish' } & Outcome)

// One fixed statement over column arrays (no per-row SQL to build), prepared once per connection.
// New rows whose (payer, nonce) already exists are skipped, not fatal to the batch; an outcome moves
// only a `verified` payment (guarded transition), anything else is left as it is.
const LEDGER_SQL = `
  with ins as (
    insert into payments (id, endpoint_id, resource, method, x402_version, network, asset, payer, pay_to,
                          value, valid_after, valid_before, nonce, signature, settlement_mode, status)
    select *, 'verified' from unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::int2[], $6::text[], $7::text[], $8::text[],
                                     $9::text[], $10::numeric[], $11::int8[], $12::int8[], $13::text[], $14::text[], $15::text[])
    on conflict (payer, nonce) do nothing
    returning id
  ), ins_ev as (
    insert into payment_events (payment_id, type, from_status, to_status)
    select id, 'verified', null, 'verified' from ins
  ), input as (
    select * from unnest($16::uuid[], $17::text[], $18::text[]) as t(id, to_status, reason)
  ), upd as (
    update payments p set status = i.to_status, updated_at = now(),
      failure_reason = case when i.to_status = 'voided' then i.reason else p.failure_reason end
    from input i where p.id = i.id and p.status = 'verified'
    returning p.id, i.to_status, i.reason
  ), upd_ev as (
    insert into payment_events (payment_id, type, from_status, to_status, reason)
    select id, to_status, 'verified', to_status, reason from upd
  )
  select 'r' as k, id from ins union all select 'f' as k, id from upd`

/**
 * The proxy's writes to the ledger, group-committed: new payments (with their `verified` event)
 * and the outcome of the call (`served` or `voided`). A paid request proceeds only once its row is
 * committed; the response leaves only once its outcome is committed.
 *
 * Both kinds share one writer, so one transaction carries the new payments of some requests and
 * the outcomes of others: one commit (one WAL flush) instead of two. An outcome only ever follows
 * its payment's committed insert, so the two never meet in one statement.
 */
export function paymentLedger(db: Kysely<Database>, opts: { maxItems?: number; maxInFlight?: number } = {}) {
  const writer = groupCommit<Write, RecordOutcome | boolean>({
    maxItems: opts.maxItems ?? 256,
    maxInFlight: opts.maxInFlight ?? 2,
    async flush(writes) {
      const rows: NewVerifiedPayment[] = []
      const outcomes: Outcome[] = []
      for (const w of writes) {
        if (w.kind === 'record') rows.push(w.row)
        else outcomes.push(w)
      }
      const col = <K extends keyof NewVerifiedPayment>(k: K) => rows.map((r) => (r[k] === undefined || r[k] === null ? null : String(r[k])))
      const result = await preparedQuery<{ k: 'r' | 'f'; id: string }>(db, 'tollgate_payment_ledger_v1', LEDGER_SQL, [
        col('id'), col('endpoint_id'), col('resource'), col('method'), col('x402_version'), col('network'), col('asset'), col('payer'),
        col('pay_to'), col('value'), col('valid_after'), col('valid_before'), col('nonce'), col('signature'), rows.map((r) => r.settlement_mode ?? 'async'),
        outcomes.map((o) => o.id), outcomes.map((o) => o.to), outcomes.map((o) => o.reason ?? null),
      ])
      const inserted = new Set<string>()
      const moved = new Set<string>()
      for (const r of result.rows) (r.k === 'r' ? inserted : moved).add(r.id)
      return writes.map((w) => (w.kind === 'record' ? (inserted.has(w.row.id) ? 'recorded' : 'duplicate') : moved.has(w.id)))
    },
  })

  return {
    record: (row: NewVerifiedPayment) => writer.add({ kind: 'record', row }) as Promise<RecordOutcome>,
    /** marks a verified payment served (settlement picks it up) or voided (never charged); false if it was not `verified` */
    finish: (id: string, to: Outcome['to'], reason?: string) => writer.add({ kind: 'finish', id, to, reason }) as Promise<boolean>,
    drain: () => writer.drain(),
  }
}

export type PaymentLedger = ReturnType<typeof paymentLedger>

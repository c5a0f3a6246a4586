import type { Kysely } from 'kysely'
import { preparedQuery } from '../db/create-db.js'
import type { Database, NewPayment } from '../db/database.js'
import { groupCommit } from '../db/group-commit.js'
import { INITIAL_STATUSES, type PaymentStatus } from './statuses.js'

export type RecordOutcome = 'recorded' | 'duplicate'

/**
 * A payment as the proxy records it: new, nothing settled yet; its status is the writer's to set.
 * `scheme` defaults to `exact`.
 */
export type NewProxyPayment = Omit<
  NewPayment,
  'tx_hash' | 'failure_reason' | 'settled_at' | 'created_at' | 'updated_at' | 'status'
>

/**
 * The statuses the proxy inserts with: `verified` before a call (record-first), `served` or
 * `voided` after it (a hosted call's one write).
 */
export type RecordStatus = Extract<PaymentStatus, 'verified' | 'served' | 'voided'>

type Outcome = { id: string; to: Extract<PaymentStatus, 'served' | 'voided'>; reason?: string }
type Write =
  { kind: 'record'; row: NewProxyPayment; status: RecordStatus; reason?: string } | ({ kind: 'finish' } & Outcome)

// One fixed statement over column arrays (no per-row SQL to build), prepared once per connection.
// New rows whose (payer, nonce) already exists are skipped, not fatal to the batch; an outcome moves
// only a `verified` payment (guarded transition), anything else is left as it is. Each new row gets
// one event for the status it was inserted with.
// payments is partitioned by day, so (payer, nonce) is unique in payment_nonces, not in payments
// (migrations/2026-11-26T1030-partitioned-ledger.ts): a row is recorded only if its nonce is claimed
// there in this statement.
// prepared under a new name whenever the statement changes (a connection keeps the old one)
const LEDGER_SQL = `
  with rows as (
    select * from unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::int2[], $6::text[], $7::text[], $8::text[],
                         $9::text[], $10::numeric[], $11::int8[], $12::int8[], $13::text[], $14::text[], $15::text[], $16::text[], $17::text[], $21::text[])
      as r(id, endpoint_id, resource, method, x402_version, network, asset, payer, pay_to,
           value, valid_after, valid_before, nonce, signature, settlement_mode, status, failure_reason, scheme)
  ), claimed as (
    insert into payment_nonces (payer, nonce, valid_before, payment_id)
    select payer, nonce, valid_before, id from rows
    on conflict (payer, nonce) do nothing
    returning payment_id
  ), ins as (
    insert into payments (id, endpoint_id, resource, method, x402_version, network, asset, payer, pay_to,
                          value, valid_after, valid_before, nonce, signature, settlement_mode, status, failure_reason, scheme)
    select r.* from rows r join claimed c on c.payment_id = r.id
    returning id, status, failure_reason
  ), ins_ev as (
    insert into payment_events (payment_id, type, from_status, to_status, reason)
    select id, status, null, status, failure_reason from ins
  ), input as (
    select * from unnest($18::uuid[], $19::text[], $20::text[]) as t(id, to_status, reason)
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
 * The proxy's writes to the ledger, group-committed: new payments (with their first event) and
 * the outcome of a recorded call (`served` or `voided`).
 *
 * - A hosted call is recorded once, after its handler answered, directly as `served`: one write
 *   per paid call, and a call that failed leaves no row at all (nothing to void).
 * - A call forwarded to a seller's upstream is recorded `verified` first (the upstream receives
 *   the payment id and may look it up), then finished.
 *
 * Both kinds share one writer, so one transaction carries the new payments of some requests and
 * the outcomes of others: one commit (one WAL flush) for all. An outcome only ever follows its
 * payment's committed insert, so the two never meet in one statement.
 */
export function createLedgerWriter(db: Kysely<Database>, opts: { maxItems?: number; maxInFlight?: number } = {}) {
  const writer = groupCommit<Write, RecordOutcome | boolean>({
    maxItems: opts.maxItems ?? 256,
    maxInFlight: opts.maxInFlight ?? 2,
    async flush(writes) {
      const rows: NewProxyPayment[] = []
      const statuses: RecordStatus[] = []
      const reasons: (string | null)[] = []
      const outcomes: Outcome[] = []
      for (const w of writes) {
        if (w.kind === 'record') {
          rows.push(w.row)
          statuses.push(w.status)
          reasons.push(w.reason ?? null)
        } else outcomes.push(w)
      }
      const col = <K extends keyof NewProxyPayment>(k: K) =>
        rows.map((r) => (r[k] === undefined || r[k] === null ? null : String(r[k])))
      const result = await preparedQuery<{ k: 'r' | 'f'; id: string }>(db, 'tollgate_payment_ledger_v4', LEDGER_SQL, [
        col('id'),
        col('endpoint_id'),
        col('resource'),
        col('method'),
        col('x402_version'),
        col('network'),
        col('asset'),
        col('payer'),
        col('pay_to'),
        col('value'),
        col('valid_after'),
        col('valid_before'),
        col('nonce'),
        col('signature'),
        rows.map((r) => r.settlement_mode ?? 'async'),
        statuses,
        reasons,
        outcomes.map((o) => o.id),
        outcomes.map((o) => o.to),
        outcomes.map((o) => o.reason ?? null),
        rows.map((r) => r.scheme ?? 'exact'),
      ])
      const inserted = new Set<string>()
      const moved = new Set<string>()
      for (const r of result.rows) (r.k === 'r' ? inserted : moved).add(r.id)
      return writes.map((w) =>
        w.kind === 'record' ? (inserted.has(w.row.id) ? 'recorded' : 'duplicate') : moved.has(w.id),
      )
    },
  })

  return {
    /**
     * Inserts a new payment as `verified` (default; its outcome follows with `finish`), or directly
     * as `served` or `voided` (with `reason`) once its call ended; 'duplicate' when its (payer,
     * nonce) is already recorded.
     */
    record(row: NewProxyPayment, status: RecordStatus = 'verified', reason?: string): Promise<RecordOutcome> {
      if (!INITIAL_STATUSES.has(status))
        return Promise.reject(new Error(`payment ledger: a payment cannot be recorded as ${status}`))
      return writer.add({ kind: 'record', row, status, reason }) as Promise<RecordOutcome>
    },
    /** marks a verified payment served (settlement picks it up) or voided (never charged); false if it was not `verified` */
    finish: (id: string, to: Outcome['to'], reason?: string) =>
      writer.add({ kind: 'finish', id, to, reason }) as Promise<boolean>,
    drain: () => writer.drain(),
  }
}

export type LedgerWriter = ReturnType<typeof createLedgerWriter>

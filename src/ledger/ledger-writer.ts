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
> & {
  /**
   * A `deferred` payment's voucher, written to `deferred_vouchers` in the same statement (not for
   * a `voided` call): buyer = payer, seller = pay_to, asset, digest = nonce and signature come
   * from the row.
   */
  voucher?: VoucherRecord
  /**
   * A `batch-settlement` call's charge, moved in `batch_channels` in the same statement when the
   * row is inserted `served`: compare-and-set from `expected` to `expected + value`, and the payment
   * row only if it moved ('duplicate' otherwise: refused, nothing charged). Such rows take no
   * `payment_nonces` row and no insert event: the channel's cumulative amount is their replay
   * guard, and a served call costs two row writes.
   */
  channel?: ChannelCharge
}

/** The channel move of a served `batch-settlement` call (decimal strings, lower-case hex). */
interface ChannelCharge {
  channel_id: string
  /** `charged` as the call reserved it */
  expected: string
  signed_max: string
  signature: string
}

/** The voucher fields a deferred payment row does not carry itself (all lower-case hex / decimal). */
export interface VoucherRecord {
  escrow: string
  voucher_id: string
  nonce: string
  value_aggregate: string
  timestamp: string
}

/**
 * The statuses the proxy inserts with: `verified` before a call (record-first), `served` or
 * `voided` after it (a hosted call's one write).
 */
export type RecordStatus = Extract<PaymentStatus, 'verified' | 'served' | 'voided'>

type Outcome = {
  id: string
  to: Extract<PaymentStatus, 'served' | 'voided'>
  reason?: string
  /** `upto`: the actual charge, known once the call answered */
  value?: bigint
}
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
//
// A deferred payment's voucher goes in first — one insert: the head of a voucher id is its highest
// nonce, no flag to move (migration 2026-11-26T1110) — and the payment row only if its voucher went
// in: a voucher whose (id, nonce) or digest is stored already leaves no payment ('duplicate':
// refused, nothing charged). A voided call stores no voucher.
const LEDGER_SQL = `
  with vin as (
    select * from unnest($25::text[], $26::text[], $27::text[], $28::text[], $29::text[], $30::numeric[],
                         $31::numeric[], $32::int8[], $33::text[], $34::text[])
      as t(escrow, buyer, seller, asset, voucher_id, nonce, value_aggregate, ts, signature, digest)
    where not exists (select 1 from payment_nonces p where p.payer = t.buyer and p.nonce = t.digest)
  ), vins as (
    insert into deferred_vouchers (escrow, buyer, seller, asset, voucher_id, nonce, value_aggregate, timestamp,
                                   signature, digest, collected)
    select n.escrow, n.buyer, n.seller, n.asset, n.voucher_id, n.nonce, n.value_aggregate, n.ts, n.signature, n.digest,
      coalesce((select d.collected from deferred_vouchers d where d.escrow = n.escrow and d.buyer = n.buyer
          and d.seller = n.seller and d.asset = n.asset and d.voucher_id = n.voucher_id
          order by d.nonce desc limit 1), 0)
    from vin n
    on conflict do nothing
    returning buyer, digest
  ), chup as (
    update batch_channels b set charged = b.charged + c.value, signed_max_claimable = c.signed_max,
      signature = c.signature, last_request_at = now(), updated_at = now(),
      oldest_unclaimed_at = case when b.charged + c.value > b.total_claimed
        then coalesce(b.oldest_unclaimed_at, now()) else b.oldest_unclaimed_at end
    from unnest($35::text[], $36::uuid[], $37::numeric[], $38::numeric[], $39::numeric[], $40::text[])
      as c(channel_id, payment_id, expected, value, signed_max, signature)
    where b.channel_id = c.channel_id and b.charged = c.expected
    returning c.payment_id
  ), rows as (
    select * from unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::int2[], $6::text[], $7::text[], $8::text[],
                         $9::text[], $10::numeric[], $11::int8[], $12::int8[], $13::text[], $14::text[], $15::text[], $16::text[], $17::text[], $21::text[],
                         $22::numeric[], $23::text[])
      as r(id, endpoint_id, resource, method, x402_version, network, asset, payer, pay_to, value, valid_after,
           valid_before, nonce, signature, settlement_mode, status, failure_reason, scheme, max_value, facilitator)
    where (r.scheme <> 'deferred' or r.status = 'voided'
      or exists (select 1 from vins v where v.buyer = r.payer and v.digest = r.nonce))
      and (r.scheme <> 'batch-settlement' or r.status <> 'served' or exists (select 1 from chup u where u.payment_id = r.id))
  ), claimed as (
    insert into payment_nonces (payer, nonce, valid_before, payment_id)
    select payer, nonce, valid_before, id from rows where scheme <> 'batch-settlement'
    on conflict (payer, nonce) do nothing
    returning payment_id
  ), ins as (
    insert into payments (id, endpoint_id, resource, method, x402_version, network, asset, payer, pay_to,
                          value, valid_after, valid_before, nonce, signature, settlement_mode, status, failure_reason, scheme,
                          max_value, facilitator)
    select r.* from rows r where r.scheme = 'batch-settlement' or r.id in (select payment_id from claimed)
    returning id, status, failure_reason, scheme
  ), ins_ev as (
    insert into payment_events (payment_id, type, from_status, to_status, reason)
    select id, status, null, status, failure_reason from ins where scheme <> 'batch-settlement'
  ), input as (
    select * from unnest($18::uuid[], $19::text[], $20::text[], $24::numeric[]) as t(id, to_status, reason, value)
  ), upd as (
    update payments p set status = i.to_status, updated_at = now(), value = coalesce(i.value, p.value),
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
    flush: (writes) => flushLedger(db, writes),
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
    /**
     * marks a verified payment served (settlement picks it up) or voided (never charged); false if
     * it was not `verified`. `value`: an `upto` payment's actual charge (≤ its max_value).
     */
    finish: (id: string, to: Outcome['to'], reason?: string, value?: bigint) =>
      writer.add({ kind: 'finish', id, to, reason, value }) as Promise<boolean>,
    /** one event on a payment outside its status changes (an `upto` charge capped at the maximum) */
    event: async (id: string, type: string, reason: string, data: Record<string, unknown>): Promise<void> => {
      await db
        .insertInto('payment_events')
        .values({ payment_id: id, type, from_status: null, to_status: null, reason, data: JSON.stringify(data) })
        .execute()
    },
    drain: () => writer.drain(),
  }
}

export type LedgerWriter = ReturnType<typeof createLedgerWriter>

/** One group commit's writes sorted by what the statement does with them. */
interface LedgerBatch {
  rows: NewProxyPayment[]
  statuses: RecordStatus[]
  reasons: (string | null)[]
  outcomes: Outcome[]
  vouchers: { row: NewProxyPayment; v: VoucherRecord }[]
  channels: { row: NewProxyPayment; c: ChannelCharge }[]
}

/** Runs one batch of writes as LEDGER_SQL; each write's answer in its place. */
async function flushLedger(db: Kysely<Database>, writes: Write[]): Promise<(RecordOutcome | boolean)[]> {
  const result = await preparedQuery<{ k: 'r' | 'f'; id: string }>(
    db,
    'tollgate_payment_ledger_v8',
    LEDGER_SQL,
    ledgerParams(batchOf(writes)),
  )
  const inserted = new Set<string>()
  const moved = new Set<string>()
  for (const r of result.rows) (r.k === 'r' ? inserted : moved).add(r.id)
  return writes.map((w) =>
    w.kind === 'record' ? (inserted.has(w.row.id) ? 'recorded' : 'duplicate') : moved.has(w.id),
  )
}

function batchOf(writes: Write[]): LedgerBatch {
  const b: LedgerBatch = { rows: [], statuses: [], reasons: [], outcomes: [], vouchers: [], channels: [] }
  for (const w of writes) {
    if (w.kind === 'record') {
      b.rows.push(w.row)
      if (w.row.voucher && w.status !== 'voided') b.vouchers.push({ row: w.row, v: w.row.voucher })
      if (w.row.channel && w.status === 'served') b.channels.push({ row: w.row, c: w.row.channel })
      b.statuses.push(w.status)
      b.reasons.push(w.reason ?? null)
    } else b.outcomes.push(w)
  }
  return b
}

/** LEDGER_SQL's parameters $1…$40: column arrays of the new rows, the outcomes, the vouchers and the channel moves. */
function ledgerParams({ rows, statuses, reasons, outcomes, vouchers, channels }: LedgerBatch): unknown[] {
  const col = <K extends keyof NewProxyPayment>(k: K) =>
    rows.map((r) => (r[k] === undefined || r[k] === null ? null : String(r[k])))
  return [
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
    col('max_value'),
    col('facilitator'),
    outcomes.map((o) => (o.value === undefined ? null : o.value.toString())),
    ...voucherParams(vouchers),
    ...channelParams(channels),
  ]
}

/** $25…$34: the deferred vouchers written beside their payments. */
function voucherParams(vouchers: LedgerBatch['vouchers']): unknown[] {
  return [
    vouchers.map((x) => x.v.escrow),
    vouchers.map((x) => x.row.payer),
    vouchers.map((x) => x.row.pay_to),
    vouchers.map((x) => x.row.asset),
    vouchers.map((x) => x.v.voucher_id),
    vouchers.map((x) => x.v.nonce),
    vouchers.map((x) => x.v.value_aggregate),
    vouchers.map((x) => x.v.timestamp),
    vouchers.map((x) => x.row.signature ?? null),
    vouchers.map((x) => x.row.nonce),
  ]
}

/** $35…$40: the batch-settlement channel moves of served calls. */
function channelParams(channels: LedgerBatch['channels']): unknown[] {
  return [
    channels.map((x) => x.c.channel_id),
    channels.map((x) => x.row.id),
    channels.map((x) => x.c.expected),
    channels.map((x) => String(x.row.value)),
    channels.map((x) => x.c.signed_max),
    channels.map((x) => x.c.signature),
  ]
}

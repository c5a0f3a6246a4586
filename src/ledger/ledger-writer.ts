import type { Kysely } from 'kysely'
import { preparedQuery } from '../db/create-db.js'
import type { Database, NewPayment } from '../db/database.js'
import type { StoredAnswer } from '../db/payment-identifier-store.js'
import { groupCommit } from '../db/group-commit.js'
import { INITIAL_STATUSES, type PaymentStatus } from './statuses.js'

/** `id_used`: the row carried an IdClaim that did not go in (the id is used); nothing was written */
export type RecordOutcome = 'recorded' | 'duplicate' | 'id_used'

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
 * A call's x402 `payment-identifier`, released in the statement that writes the call's outcome (a
 * hosted call's one write, or a record-first call's `finish`) instead of a statement of its own:
 * the id's lease ends and the answer is kept (`answer`, a served hosted call's), upserted so an id
 * row lost since the claim is written again. It applies only when the payment's write did
 * (recorded, or moved from `verified`); the writer sets `released` then, and the caller releases
 * the id on its own otherwise (payment-id.ts).
 */
export interface IdRelease {
  payer: string
  id: string
  fingerprint: string
  /** seconds the id is kept when its row has to be written again */
  keepSeconds: number
  answer: StoredAnswer | undefined
  released?: boolean
}

/**
 * A served payment's access grant (x402 sign-in-with-x paid access), upserted in the statement that
 * writes the payment's outcome instead of a commit of its own (grants of one payer and scope in a
 * batch merged: the later payment names it, the longest access wins). The writer sets `granted`
 * (the grant's payment and how long it runs) when it went in, for the Redis copy
 * (access-grant-store.ts).
 */
export interface AccessGrantWrite {
  payer: string
  scopeId: string
  minutes: number
  granted?: { paymentId: string; msLeft: number }
}

/** What a payment's write may carry beside it (each applies only if the payment's write did). */
export interface WriteExtras {
  release?: IdRelease
  claim?: IdClaim
  grant?: AccessGrantWrite
}

/**
 * A record-first call's `payment-identifier`, claimed in the statement that records its payment
 * `verified` instead of a statement of its own: the payment is recorded only if the claim went in
 * ('id_used' otherwise, and nothing is written). The writer sets `claimed` when it did.
 */
export interface IdClaim {
  payer: string
  id: string
  fingerprint: string
  leaseMs: number
  keepSeconds: number
  claimed?: boolean
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
  | ({ kind: 'record'; row: NewProxyPayment; status: RecordStatus; reason?: string } & WriteExtras)
  | ({ kind: 'finish'; release?: IdRelease; grant?: AccessGrantWrite } & Outcome)

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
//
// A record-first call's payment-identifier claim (IdClaim) goes in first, and its payment only if
// the claim did; a write's payment-identifier release (IdRelease) is upserted last, only for the
// payments this statement inserted or moved, and so is a served payment's access grant.
const LEDGER_SQL = `
  with idclaim as (
    insert into payment_identifiers (payer, payment_identifier, fingerprint, payment_id, claimed_until, expires_at)
    select t.payer, t.id, t.fingerprint, t.payment_id, now() + make_interval(secs => t.lease_s),
      now() + make_interval(secs => t.keep_s)
    from unnest($49::text[], $50::text[], $51::text[], $52::uuid[], $53::float8[], $54::float8[])
      as t(payer, id, fingerprint, payment_id, lease_s, keep_s)
    on conflict (payer, payment_identifier) do nothing
    returning payment_id
  ), vin as (
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
      and (r.id <> all($52::uuid[]) or exists (select 1 from idclaim c where c.payment_id = r.id))
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
  ), idrel as (
    insert into payment_identifiers as i (payer, payment_identifier, fingerprint, payment_id, claimed_until, expires_at,
                                          answer_status, answer_content_type, answer_body)
    select t.payer, t.id, t.fingerprint, t.payment_id, null, now() + make_interval(secs => t.keep_s), t.status,
      t.content_type, t.body
    from unnest($41::text[], $42::text[], $43::text[], $44::uuid[], $45::int2[], $46::text[], $47::bytea[], $48::float8[])
      as t(payer, id, fingerprint, payment_id, status, content_type, body, keep_s)
    where t.payment_id in (select id from ins union all select id from upd)
    on conflict (payer, payment_identifier) do update set claimed_until = null, answer_status = excluded.answer_status,
      answer_content_type = excluded.answer_content_type, answer_body = excluded.answer_body
    where i.payment_id = excluded.payment_id
  ), gin as (
    select g.payer, g.scope_id, (array_agg(g.payment_id order by g.ord desc))[1] as payment_id, max(g.minutes) as minutes
    from unnest($55::text[], $56::uuid[], $57::uuid[], $58::int4[]) with ordinality
      as g(payer, scope_id, payment_id, minutes, ord)
    where g.payment_id in (select id from ins union all select id from upd)
    group by g.payer, g.scope_id
  ), granted as (
    insert into access_grants as a (payer, scope_id, payment_id, expires_at)
    select payer, scope_id, payment_id, now() + make_interval(mins => minutes) from gin
    on conflict (payer, scope_id) do update set payment_id = excluded.payment_id,
      expires_at = greatest(a.expires_at, excluded.expires_at)
    returning a.payer || ' ' || a.scope_id::text as grant_key, a.payment_id,
      (extract(epoch from a.expires_at - now()) * 1000)::int8 as ms_left
  )
  select 'r' as k, id, null as grant_key, null::int8 as ms_left from ins
  union all select 'f', id, null, null from upd
  union all select 'c', payment_id, null, null from idclaim
  union all select 'g', payment_id, grant_key, ms_left from granted`

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
    record(
      row: NewProxyPayment,
      status: RecordStatus = 'verified',
      reason?: string,
      extras?: WriteExtras,
    ): Promise<RecordOutcome> {
      if (!INITIAL_STATUSES.has(status))
        return Promise.reject(new Error(`payment ledger: a payment cannot be recorded as ${status}`))
      return writer.add({ kind: 'record', row, status, reason, ...extras }) as Promise<RecordOutcome>
    },
    /**
     * marks a verified payment served (settlement picks it up) or voided (never charged); false if
     * it was not `verified`. `value`: an `upto` payment's actual charge (≤ its max_value).
     */
    finish: (id: string, to: Outcome['to'], reason?: string, value?: bigint, extras?: Omit<WriteExtras, 'claim'>) =>
      writer.add({ kind: 'finish', id, to, reason, value, ...extras }) as Promise<boolean>,
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
  releases: { paymentId: string; r: IdRelease }[]
  claims: { paymentId: string; c: IdClaim }[]
  grants: { paymentId: string; g: AccessGrantWrite }[]
}

/** Runs one batch of writes as LEDGER_SQL; each write's answer in its place. */
async function flushLedger(db: Kysely<Database>, writes: Write[]): Promise<(RecordOutcome | boolean)[]> {
  const batch = batchOf(writes)
  const result = await preparedQuery<{ k: 'r' | 'f' | 'c' | 'g'; id: string; grant_key: string; ms_left: string }>(
    db,
    'tollgate_payment_ledger_v10',
    LEDGER_SQL,
    ledgerParams(batch),
  )
  const got = { r: new Set<string>(), f: new Set<string>(), c: new Set<string>(), g: new Set<string>() }
  const grants = new Map<string, { paymentId: string; msLeft: number }>()
  for (const r of result.rows) {
    got[r.k].add(r.id)
    if (r.k === 'g') grants.set(r.grant_key, { paymentId: r.id, msLeft: Number(r.ms_left) })
  }
  const written = (paymentId: string) => got.r.has(paymentId) || got.f.has(paymentId)
  for (const { paymentId, r } of batch.releases) r.released = written(paymentId)
  for (const { paymentId, c } of batch.claims) c.claimed = got.c.has(paymentId)
  for (const { paymentId, g } of batch.grants) if (written(paymentId)) g.granted = grants.get(`${g.payer} ${g.scopeId}`)
  return writes.map((w) => {
    if (w.kind === 'finish') return got.f.has(w.id)
    if (got.r.has(w.row.id)) return 'recorded'
    return w.claim && !w.claim.claimed ? 'id_used' : 'duplicate'
  })
}

function batchOf(writes: Write[]): LedgerBatch {
  const b: LedgerBatch = {
    ...{ rows: [], statuses: [], reasons: [], outcomes: [], vouchers: [], channels: [] },
    ...{ releases: [], claims: [], grants: [] },
  }
  // one upsert must not touch a row twice: a second release of the same id in a batch is left to its caller
  const ids = new Set<string>()
  for (const w of writes) {
    if (w.release && !ids.has(`${w.release.payer}\0${w.release.id}`)) {
      ids.add(`${w.release.payer}\0${w.release.id}`)
      b.releases.push({ paymentId: w.kind === 'record' ? w.row.id : w.id, r: w.release })
    }
    if (w.kind === 'record' && w.claim) b.claims.push({ paymentId: w.row.id, c: w.claim })
    if (w.grant) b.grants.push({ paymentId: w.kind === 'record' ? w.row.id : w.id, g: w.grant })
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

/** LEDGER_SQL's parameters $1…$58: column arrays of the new rows, the outcomes, the vouchers, the channel moves, the id releases and claims, and the access grants. */
function ledgerParams(b: LedgerBatch): unknown[] {
  const { rows, statuses, reasons, outcomes } = b
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
    ...voucherParams(b.vouchers),
    ...channelParams(b.channels),
    ...releaseParams(b.releases),
    ...claimParams(b.claims),
    b.grants.map((x) => x.g.payer),
    b.grants.map((x) => x.g.scopeId),
    b.grants.map((x) => x.paymentId),
    b.grants.map((x) => x.g.minutes),
  ]
}

/** $49…$54: the payment-identifier claims of record-first calls. */
function claimParams(claims: LedgerBatch['claims']): unknown[] {
  return [
    claims.map((x) => x.c.payer),
    claims.map((x) => x.c.id),
    claims.map((x) => x.c.fingerprint),
    claims.map((x) => x.paymentId),
    claims.map((x) => x.c.leaseMs / 1000),
    claims.map((x) => x.c.keepSeconds),
  ]
}

/** $41…$48: the payment-identifier releases. */
function releaseParams(releases: LedgerBatch['releases']): unknown[] {
  return [
    releases.map((x) => x.r.payer),
    releases.map((x) => x.r.id),
    releases.map((x) => x.r.fingerprint),
    releases.map((x) => x.paymentId),
    releases.map((x) => x.r.answer?.status ?? null),
    releases.map((x) => x.r.answer?.contentType ?? null),
    releases.map((x) => x.r.answer?.body ?? null),
    releases.map((x) => x.r.keepSeconds),
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

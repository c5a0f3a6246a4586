import { sql, type Kysely } from 'kysely'
import type { Database, Payment } from '../db/database.js'
import { assertTransitions, type PaymentStatus } from './statuses.js'

/** What a transition hands back per payment it actually moved (exposure bookkeeping needs it). */
export interface Moved {
  id: string
  payer: string
  asset: string
  value: string
  from_status: PaymentStatus
  scheme: string
}

export interface TransitionOpts {
  reason?: string | null
  txHash?: string | null
  /** event type; defaults to the target status */
  type?: string
  data?: Record<string, unknown>
}

/**
 * Guarded transition: moves only the payments currently in one of `from`, appends one event per
 * moved payment, and returns exactly those. Every `from → to` must be in the transition table
 * (statuses.ts), so a final payment never moves again; concurrent callers cannot both win.
 *
 * @example
 *   await transition(db, ids, ['settling'], 'settled', { txHash })
 */
export async function transition(
  db: Kysely<Database>,
  ids: string[],
  from: PaymentStatus[],
  to: PaymentStatus,
  opts: TransitionOpts = {},
): Promise<Moved[]> {
  if (ids.length === 0) return []
  assertTransitions(from, to)
  const reason = opts.reason ?? null
  const txHash = opts.txHash ?? null
  const data = opts.data ? JSON.stringify(opts.data) : null
  const r = await sql<Moved>`
    with cur as (
      select id, status from payments where id = any(${ids}::uuid[]) and status = any(${from}::text[]) for update
    ), upd as (
      update payments p set status = ${to}, updated_at = now(),
        tx_hash = coalesce(${txHash}::text, p.tx_hash),
        settled_at = case when ${to}::text = 'settled' then now() else p.settled_at end,
        failure_reason = case when ${to}::text in ('failed', 'voided') then ${reason}::text else p.failure_reason end
      from cur where p.id = cur.id and p.status = cur.status
      returning p.id, p.payer, p.asset, p.value::text as value, cur.status as from_status, p.scheme
    ), ev as (
      insert into payment_events (payment_id, type, from_status, to_status, reason, data)
      select id, ${opts.type ?? to}, from_status, ${to}, ${reason}::text, ${data}::jsonb from upd
    )
    select * from upd`.execute(db)
  return r.rows
}

/**
 * Claims up to `limit` served `exact` payments of one (network, asset) for settlement: served ->
 * settling, with the `upto` ones whose witness names `relayer` as facilitator (only it can settle
 * them). The claim's event names `relayer`, so its next lock holder can find a dead claimer's claims
 * (orphanedClaims). Other schemes settle their own way (deferred: src/services/deferred-collect/).
 */
export async function claimServed(
  db: Kysely<Database>,
  p: { network: string; asset: string; limit: number; relayer?: string },
): Promise<Payment[]> {
  const relayer = p.relayer?.toLowerCase() ?? ''
  const r = await sql<Payment>`
    with c as (
      select id from payments where status = 'served' and (scheme = 'exact' or (scheme = 'upto' and facilitator = ${relayer}))
        and network = ${p.network} and asset = ${p.asset}
      order by created_at, id limit ${p.limit} for update skip locked
    ), upd as (
      update payments p set status = 'settling', updated_at = now() from c where p.id = c.id and p.status = 'served'
      returning p.*
    ), ev as (
      insert into payment_events (payment_id, type, from_status, to_status, data)
      select id, 'settling', 'served', 'settling', case when ${relayer} = '' then null else jsonb_build_object('relayer', ${relayer}::text) end from upd
    )
    select * from upd`.execute(db)
  return r.rows
}

/**
 * Claims `relayer` made (claimServed) that were never put in a batch: still `settling`, untouched
 * since that claim for `olderThanMs`, and in no pending batch. Called by the holder of the relayer's
 * lock once its pending batches are resolved, so only a previous holder (killed, or its lock lost)
 * can have made them; the sweep's `stuckAfterMs` remains the fallback for claims naming no relayer.
 */
export async function orphanedClaims(
  db: Kysely<Database>,
  p: { relayer: string; olderThanMs: number; limit?: number },
): Promise<Payment[]> {
  // the claim's event is written by the claiming statement, so its created_at equals the payment's updated_at
  const r = await sql<Payment>`
    select p.* from payments p
    where p.status = 'settling' and p.updated_at < now() - ${`${Math.ceil(p.olderThanMs)} milliseconds`}::interval
      and exists (select 1 from payment_events e where e.payment_id = p.id and e.created_at = p.updated_at
                  and e.to_status = 'settling' and e.data->>'relayer' = ${p.relayer.toLowerCase()})
      and not exists (select 1 from settlement_batch_items i join settlement_batches b on b.id = i.batch_id
                      where i.payment_id = p.id and b.status = 'pending')
    order by p.updated_at limit ${p.limit ?? 1000}`.execute(db)
  return r.rows
}

/** Claims one served payment by id (sync mode); null when it is not `served`. */
export async function claimOne(db: Kysely<Database>, id: string): Promise<Payment | null> {
  const moved = await transition(db, [id], ['served'], 'settling')
  if (moved.length === 0) return null
  return (await db.selectFrom('payments').selectAll().where('id', '=', id).executeTakeFirst()) ?? null
}

/** (network, asset) pairs that have served `exact` (or `upto`) payments waiting. */
export async function readyGroups(
  db: Kysely<Database>,
  network: string,
): Promise<Array<{ network: string; asset: string }>> {
  return db
    .selectFrom('payments')
    .select(['network', 'asset'])
    .distinct()
    .where('status', '=', 'served')
    .where('scheme', 'in', ['exact', 'upto'])
    .where('network', '=', network)
    .execute()
}

/**
 * Voids `verified` payments older than `olderThan`: their call never got an outcome from the proxy
 * (it died mid-call), so nothing is owed. At most `limit` per call; returns what moved.
 */
export async function voidStaleVerified(db: Kysely<Database>, olderThan: Date, limit = 1000): Promise<Moved[]> {
  const stale = await db
    .selectFrom('payments')
    .select('id')
    .where('status', '=', 'verified')
    .where('created_at', '<', olderThan)
    .limit(limit)
    .execute()
  return transition(
    db,
    stale.map((s) => s.id),
    ['verified'],
    'voided',
    { reason: 'no_outcome' },
  )
}

/**
 * Claims up to `limit` served `deferred` payments of one seller and asset for collection: served ->
 * settling. Collection decides each from the chain: settling -> settled (its voucher's aggregate was
 * collected) or settling -> served (not yet: the escrow was short, or the transaction failed).
 */
/**
 * `served → settling` for the deferred payments whose voucher is one of a voucher id's, up to
 * `maxNonce` (the facilitator's settle of one voucher: that voucher includes every earlier one).
 */
export async function claimDeferredVoucher(
  db: Kysely<Database>,
  v: { escrow: string; buyer: string; seller: string; asset: string; voucherId: string; maxNonce: bigint },
): Promise<Payment[]> {
  const r = await sql<Payment>`
    with c as (
      select p.id from payments p join deferred_vouchers d on d.buyer = p.payer and d.digest = p.nonce
      where p.status = 'served' and p.scheme = 'deferred' and p.payer = ${v.buyer} and p.pay_to = ${v.seller}
        and p.asset = ${v.asset} and d.escrow = ${v.escrow} and d.seller = ${v.seller} and d.asset = ${v.asset}
        and d.voucher_id = ${v.voucherId} and d.nonce <= ${v.maxNonce.toString()}::numeric
      for update of p skip locked
    ), upd as (
      update payments p set status = 'settling', updated_at = now() from c where p.id = c.id and p.status = 'served'
      returning p.*
    ), ev as (
      insert into payment_events (payment_id, type, from_status, to_status) select id, 'collecting', 'served', 'settling' from upd
    )
    select * from upd`.execute(db)
  return r.rows
}

export async function claimDeferred(
  db: Kysely<Database>,
  p: { payTo: string; asset: string; limit: number },
): Promise<Payment[]> {
  const r = await sql<Payment>`
    with c as (
      select id from payments where status = 'served' and scheme = 'deferred' and pay_to = ${p.payTo} and asset = ${p.asset}
      order by created_at, id limit ${p.limit} for update skip locked
    ), upd as (
      update payments p set status = 'settling', updated_at = now() from c where p.id = c.id and p.status = 'served'
      returning p.*
    ), ev as (
      insert into payment_events (payment_id, type, from_status, to_status) select id, 'collecting', 'served', 'settling' from upd
    )
    select * from upd`.execute(db)
  return r.rows
}

import { sql, type Transaction } from 'kysely'
import type { Database } from '../../db/database.js'
import { emitEvent } from './outbox.js'
import { ALERT_TYPES, type EventType, type EventDeps } from './types.js'

// payment.* and revenue.settled are derived here, in the worker, from the payment_events rows the
// ledger already wrote, behind a cursor: the proxy's group-committed writes stay as they are (no
// outbox row on the hot path). Rows are read once they are `deriveLagMs` old, so a transaction that
// took a sequence id and committed a little later is not skipped; the events are idempotent per
// (user, source_key), and the cursor moves in the same transaction as the events it derived.

const CURSOR = 'payment_events'
const BATCH = 500

interface Row {
  id: string
  created_text: string
  /** payment_events.type: `collected` when a deferred voucher's collection settled it */
  ev_type: string
  payment_id: string
  from_status: string | null
  to_status: string | null
  reason: string | null
  value: string
  asset: string
  network: string
  payer: string
  pay_to: string
  resource: string
  scheme: string
  tx_hash: string | null
  seller_user: string | null
  payer_user: string | null
}

function typesFor(r: Row): Array<{ type: EventType; seller: boolean; payer: boolean }> {
  switch (r.to_status) {
    case 'served':
      return r.from_status === 'settling' ? [] : [{ type: 'payment.served', seller: true, payer: true }]
    case 'settled':
      return [
        { type: 'payment.settled', seller: true, payer: true },
        { type: 'revenue.settled', seller: true, payer: false },
        // a deferred payment settles when the escrow paid its voucher (the collector's `collected` event)
        ...(r.ev_type === 'collected' ? [{ type: 'voucher.collected' as const, seller: true, payer: false }] : []),
      ]
    case 'failed':
      return [{ type: 'payment.failed', seller: true, payer: true }]
    case 'voided':
      return [{ type: 'payment.voided', seller: true, payer: true }]
    default:
      return []
  }
}

function dataOf(r: Row, role: 'seller' | 'payer'): Record<string, unknown> {
  return {
    payment_id: r.payment_id,
    status: r.to_status,
    role,
    amount: r.value,
    asset: r.asset,
    network: r.network,
    scheme: r.scheme,
    payer: r.payer,
    pay_to: r.pay_to,
    resource: r.resource,
    tx_hash: r.tx_hash,
    reason: r.reason,
  }
}

async function readBatch(trx: Transaction<Database>, lagMs: number): Promise<Row[]> {
  const r = await sql<Row>`
    with cur as (select position_at, position_id from webhook_cursors where name = ${CURSOR} for update),
    ev as (
      select e.id, e.created_at, e.type, e.payment_id, e.from_status, e.to_status, e.reason
      from payment_events e, cur
      where (e.created_at, e.id) > (cur.position_at, cur.position_id)
        and e.created_at < now() - ${lagMs} * interval '1 millisecond'
      order by e.created_at, e.id limit ${BATCH}
    )
    select ev.id::text, ev.created_at::text as created_text, ev.type as ev_type, ev.payment_id, ev.from_status, ev.to_status, ev.reason,
      p.value::text, p.asset, p.network, p.payer, p.pay_to, p.resource, p.scheme, p.tx_hash,
      s.owner_user_id as seller_user, a.user_id as payer_user
    from ev join payments p on p.id = ev.payment_id
    left join endpoints en on en.id = p.endpoint_id
    left join services sv on sv.id = en.service_id
    left join sellers s on s.id = sv.seller_id
    left join agents a on lower(a.address) = lower(p.payer)
    order by ev.created_at, ev.id`.execute(trx)
  return r.rows
}

async function subscriptions(trx: Transaction<Database>, users: string[]): Promise<Set<string>> {
  if (users.length === 0) return new Set()
  const r = await sql<{ k: string }>`
    select distinct user_id || ' ' || t as k from webhook_endpoints, unnest(events) t
    where disabled_at is null and user_id = any(${users}::uuid[])`.execute(trx)
  return new Set(r.rows.map((x) => x.k))
}

/**
 * Derives the events of up to 500 payment_events rows past the cursor; returns how many rows were
 * read. Only users with an endpoint subscribed to a type get it, except alerts (payment.failed),
 * which every user concerned gets for the dashboard and email.
 */
export async function derivePaymentEvents(deps: EventDeps): Promise<number> {
  await sql`insert into webhook_cursors (name, position_at) values (${CURSOR}, now()) on conflict do nothing`.execute(
    deps.db,
  )
  return deps.db.transaction().execute(async (trx) => {
    const rows = await readBatch(trx, deps.config.webhooks.deriveLagMs)
    if (rows.length === 0) return 0
    const users = [...new Set(rows.flatMap((r) => [r.seller_user, r.payer_user]).filter((u): u is string => !!u))]
    const subs = await subscriptions(trx, users)
    for (const r of rows)
      for (const t of typesFor(r))
        for (const [role, user] of [
          ['seller', t.seller ? r.seller_user : null],
          ['payer', t.payer ? r.payer_user : null],
        ] as const) {
          if (!user || (!ALERT_TYPES.has(t.type) && !subs.has(`${user} ${t.type}`))) continue
          await emitEvent(trx, {
            userId: user,
            type: t.type,
            data: dataOf(r, role),
            sourceKey: `pe:${r.id}:${t.type}:${role}`,
          })
        }
    const last = rows[rows.length - 1]!
    await sql`update webhook_cursors set position_at = ${last.created_text}::timestamptz, position_id = ${last.id}::bigint
      where name = ${CURSOR}`.execute(trx)
    return rows.length
  })
}

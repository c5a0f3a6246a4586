import { sql, type Kysely, type Selectable } from 'kysely'
import type { Database } from '../../db/database.js'
import type { SpendWindows } from './spend-windows.js'
import type { AgentPaymentsTable } from '../../db/agent-payments-tables.js'
import { moveAgentPayment } from './move-payment.js'

type Row = Pick<
  Selectable<AgentPaymentsTable>,
  'id' | 'agent_id' | 'payer' | 'nonce' | 'amount' | 'max_amount' | 'day_window' | 'month_window'
>

/** What the wallet's unsettled total counts for a payment: an upto payment's maximum (what its authorization can move), else its amount. */
export const heldOf = (row: Pick<Row, 'payer' | 'nonce' | 'amount' | 'max_amount'>) => ({
  payer: row.payer,
  nonce: row.nonce,
  amount: BigInt(row.max_amount ?? row.amount),
})

/**
 * Releases a reserved payment early, on proof the platform checked itself:
 * - `cancelled` (exact): the receipt of its on-chain `cancelAuthorization` (chain-cancel.ts): it can
 *   never move funds. The row becomes `expired`, final.
 * - `voided` (upto to this platform's proxy): the proxy voided the call, and the Permit2 witness
 *   names one of this platform's relayers as the only settler, which never settles a voided payment.
 *   The row becomes `rejected`: past its deadline the sweep still reads the Permit2 nonce and counts
 *   it again if it was used after all.
 * An event of the same name carries the proof; the amount leaves the caps and the wallet's
 * unsettled total at once. False when it was no longer reserved (another report or the sweep first).
 */
export async function releaseEarly(
  db: Kysely<Database>,
  windows: SpendWindows,
  row: Row,
  proof:
    | { kind: 'cancelled'; hash: string; seller_payment_id: string | null }
    | { kind: 'voided'; seller_payment_id: string },
): Promise<boolean> {
  const { kind, ...data } = proof
  const to = { status: kind === 'cancelled' ? ('expired' as const) : ('rejected' as const) }
  const u = await moveAgentPayment(db, row.id, 'reserved', to, { type: kind, data })
  if (!u) return false
  // the amount as the update left it (an upto payment's may have been lowered to its charge since `row` was read)
  await windows.adjust(row.agent_id, row.payer, { day: row.day_window, month: row.month_window }, -BigInt(u.amount))
  await windows.releaseUnsettled(heldOf(row))
  return true
}

/**
 * Releases the reserved vouchers that the platform's newly signed voucher `v` supersedes: those of
 * the same wallet, seller and voucher id whose aggregate is above `v`'s base (so `v` was not built
 * on them) and at most `v`'s aggregate (so whatever of them the seller could collect, `v` covers:
 * the escrow pays a voucher id's highest aggregate once). Each becomes `expired` with a
 * `superseded` event; its amount leaves the caps. Run under the pair's voucher lock.
 */
export async function releaseSuperseded(
  db: Kysely<Database>,
  windows: SpendWindows,
  v: { rowId: string; payer: string; payTo: string; voucherId: string; base: bigint; aggregate: bigint },
): Promise<number> {
  const rows = await db
    .updateTable('agent_payments')
    .set({ status: 'expired', updated_at: sql`now()` })
    .where('payer', '=', v.payer)
    .where('pay_to', '=', v.payTo)
    .where('scheme', '=', 'deferred')
    .where('status', '=', 'reserved')
    .where('voucher_id', '=', v.voucherId)
    .where('id', '!=', v.rowId)
    .where('value_aggregate', '>', v.base.toString())
    .where('value_aggregate', '<=', v.aggregate.toString())
    .returning(['id', 'agent_id', 'amount', 'day_window', 'month_window'])
    .execute()
  for (const r of rows) {
    await db
      .insertInto('agent_payment_events')
      .values({ agent_payment_id: r.id, type: 'superseded', data: JSON.stringify({ by: v.rowId }) })
      .execute()
    await windows.adjust(r.agent_id, v.payer, { day: r.day_window, month: r.month_window }, -BigInt(r.amount))
  }
  return rows.length
}

/**
 * An upto payment whose actual charge the platform's own proxy recorded (`charged` ≤ the maximum
 * reserved): the row's amount becomes the charge and the difference leaves the caps, once (the
 * update only matches while the amount is still the maximum). The wallet's unsettled total keeps
 * the maximum until settlement: that is what the signed authorization can move.
 */
export async function lowerToCharge(db: Kysely<Database>, windows: SpendWindows, row: Row, charged: bigint) {
  if (row.max_amount === null || charged >= BigInt(row.max_amount)) return false
  const u = await db
    .updateTable('agent_payments')
    .set({ amount: charged.toString(), updated_at: sql`now()` })
    .where('id', '=', row.id)
    .where('status', 'in', ['reserved', 'accepted'])
    .where(sql<boolean>`amount = max_amount`)
    .returning('id')
    .executeTakeFirst()
  if (!u) return false
  const back = BigInt(row.max_amount) - charged
  await db
    .insertInto('agent_payment_events')
    .values({
      agent_payment_id: row.id,
      type: 'charged',
      data: JSON.stringify({ max_amount: row.max_amount, charged: charged.toString(), released: back.toString() }),
    })
    .execute()
  await windows.adjust(row.agent_id, row.payer, { day: row.day_window, month: row.month_window }, -back)
  return true
}

/** Unix seconds until which a settled payment stays counted: every process has re-read the balance after it by then. */
export function settledReleaseAt(nowMs: number, balanceTtlMs: number): number {
  return Math.ceil((nowMs + balanceTtlMs) / 1000) + 1
}

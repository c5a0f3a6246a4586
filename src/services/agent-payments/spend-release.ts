import { sql, type Kysely, type Selectable } from 'kysely'
import type { Database } from '../../db/database.js'
import type { CollectionProof } from './collection-proof.js'
import type { SpendWindows } from './spend-windows.js'
import type { AgentPaymentsTable } from '../../db/agent-payments-tables.js'

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
 * Releases a reserved payment proven never to be collected: `rejected`, a `released` event with
 * the proof, and its amount out of the caps and of the wallet's unsettled total at once. False
 * when it was no longer reserved (another report or the sweep decided first).
 */
export async function releaseProven(
  db: Kysely<Database>,
  windows: SpendWindows,
  row: Row,
  proof: Extract<CollectionProof, { proven: true }>,
): Promise<boolean> {
  const u = await db
    .updateTable('agent_payments')
    .set({ status: 'rejected', updated_at: sql`now()` })
    .where('id', '=', row.id)
    .where('status', '=', 'reserved')
    .returning(['id', 'amount'])
    .executeTakeFirst()
  if (!u) return false
  await db
    .insertInto('agent_payment_events')
    .values({
      agent_payment_id: row.id,
      type: 'released',
      data: JSON.stringify({ proof: proof.reason, seller_payment_id: proof.seller?.id ?? null }),
    })
    .execute()
  // the amount as the update left it (an upto payment's may have been lowered to its charge since `row` was read)
  await windows.adjust(row.agent_id, row.payer, { day: row.day_window, month: row.month_window }, -BigInt(u.amount))
  await windows.releaseUnsettled(heldOf(row))
  return true
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

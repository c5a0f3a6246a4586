import { sql, type Kysely, type Selectable } from 'kysely'
import type { Database } from '../../db/database.js'
import type { CollectionProof } from './collection-proof.js'
import type { SpendWindows } from './spend-windows.js'
import type { AgentPaymentsTable } from '../../db/agent-payments-tables.js'

/**
 * Releases a reserved payment proven never to be collected: `rejected`, a `released` event with
 * the proof, and its amount out of the caps and of the wallet's unsettled total at once. False
 * when it was no longer reserved (another report or the sweep decided first).
 */
export async function releaseProven(
  db: Kysely<Database>,
  windows: SpendWindows,
  row: Selectable<AgentPaymentsTable>,
  proof: Extract<CollectionProof, { proven: true }>,
): Promise<boolean> {
  const u = await db
    .updateTable('agent_payments')
    .set({ status: 'rejected', updated_at: sql`now()` })
    .where('id', '=', row.id)
    .where('status', '=', 'reserved')
    .returning('id')
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
  await windows.adjust(row.agent_id, row.payer, { day: row.day_window, month: row.month_window }, -BigInt(row.amount))
  await windows.releaseUnsettled({ payer: row.payer, nonce: row.nonce, amount: BigInt(row.amount) })
  return true
}

/** Unix seconds until which a settled payment stays counted: every process has re-read the balance after it by then. */
export function settledReleaseAt(nowMs: number, balanceTtlMs: number): number {
  return Math.ceil((nowMs + balanceTtlMs) / 1000) + 1
}

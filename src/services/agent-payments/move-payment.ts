/**
 * The guarded status move of an agent payment, with its event row: the update matches only while
 * the row is still in `from`, so that of a concurrent sweep, report and voucher only one moves it,
 * and only that one writes the event (and adjusts the counters after).
 */
import { sql, type Kysely } from 'kysely'
import type { AgentPaymentStatus } from '../../db/agent-payments-tables.js'
import type { Database } from '../../db/database.js'

/** Moves payment `id` from `from` to `to`; its amount as the update left it, or undefined when it was no longer in `from`. */
export async function moveAgentPayment(
  db: Kysely<Database>,
  id: string,
  from: AgentPaymentStatus,
  to: { status: AgentPaymentStatus; amount?: string },
  event: { type: string; data: Record<string, unknown> | null },
): Promise<{ amount: string } | undefined> {
  const u = await db
    .updateTable('agent_payments')
    .set({ ...to, updated_at: sql`now()` })
    .where('id', '=', id)
    .where('status', '=', from)
    .returning(['amount'])
    .executeTakeFirst()
  if (!u) return undefined
  await db
    .insertInto('agent_payment_events')
    .values({ agent_payment_id: id, type: event.type, data: event.data === null ? null : JSON.stringify(event.data) })
    .execute()
  return u
}

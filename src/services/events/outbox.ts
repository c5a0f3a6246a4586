import { sql, type Kysely, type Transaction } from 'kysely'
import type { Database } from '../../db/database.js'
import { ALERT_TYPES, type EventType, type NoticeType } from './types.js'

export interface EmitInput {
  userId: string
  type: EventType | NoticeType
  data: Record<string, unknown>
  /** makes the event idempotent per user: a second emit with the same key writes nothing */
  sourceKey?: string
  /** an alert email and dashboard entry (default: for the alert types) */
  notify?: boolean
}

/**
 * Writes one event to the outbox and a pending delivery for each of the user's enabled endpoints
 * that subscribes to its type, in ONE statement on the caller's transaction, so the event exists
 * exactly when what it reports was committed. The worker's `webhook-dispatch` job delivers it.
 * Returns the event id (`evt_...`), or undefined when `sourceKey` was already emitted.
 *
 * @example
 *   await db.transaction().execute(async (trx) => {
 *     await trx.updateTable('topups').set({ status: 'confirmed' }).where('id', '=', id).execute()
 *     await emitEvent(trx, { userId, type: 'topup.completed', data: { topup_id: id } })
 *   })
 */
export async function emitEvent(
  trx: Transaction<Database> | Kysely<Database>,
  e: EmitInput,
): Promise<string | undefined> {
  const notify = (e.notify ?? ALERT_TYPES.has(e.type)) ? 'pending' : null
  const r = await sql<{ id: string }>`
    with ev as (
      insert into webhook_events (user_id, type, data, source_key, notify)
      values (${e.userId}, ${e.type}, ${JSON.stringify(e.data)}::jsonb, ${e.sourceKey ?? null}, ${notify})
      on conflict (user_id, source_key) where source_key is not null do nothing
      returning id, user_id, type, data
    ), d as (
      insert into webhook_deliveries (endpoint_id, event_id)
      select w.id, ev.id from ev join webhook_endpoints w
        on w.user_id = ev.user_id and w.disabled_at is null and ev.type = any(w.events)
       and (ev.type <> 'agent.cap_near' or (ev.data->>'percent')::numeric = w.cap_near_percent)
    )
    select id from ev`.execute(trx)
  return r.rows[0]?.id
}

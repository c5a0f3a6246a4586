import type { ColumnType, Generated } from 'kysely'

type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>

/** A user's webhook receivers (migration 2026-11-28T1310). */
export interface WebhookEndpointsTable {
  id: Generated<string>
  user_id: string
  url: string
  events: string[]
  cap_near_percent: ColumnType<number, number | undefined, number>
  encrypted_secret: string
  disabled_at: Date | string | null
  disabled_reason: string | null
  created_at: Timestamp
  updated_at: Timestamp
}

type NotifyState = 'pending' | 'sent' | 'skipped' | 'failed'

/** The outbox: one event per user it concerns. */
export interface WebhookEventsTable {
  id: Generated<string>
  user_id: string
  type: string
  data: ColumnType<unknown, string | undefined, never>
  source_key: string | null
  notify: NotifyState | null
  created_at: Timestamp
}

type DeliveryStatus = 'pending' | 'delivered' | 'failed'

export interface WebhookDeliveriesTable {
  id: Generated<string>
  endpoint_id: string
  event_id: string
  status: ColumnType<DeliveryStatus, DeliveryStatus | undefined, DeliveryStatus>
  attempts: ColumnType<number, number | undefined, number>
  next_at: Timestamp
  locked_until: Date | string | null
  response_code: number | null
  latency_ms: number | null
  last_error: string | null
  created_at: Timestamp
  updated_at: Timestamp
}

export interface WebhookCursorsTable {
  name: string
  position_at: Date | string
  position_id: ColumnType<string, string | number | bigint | undefined, string | number | bigint>
}

import type { Kysely } from 'kysely'
import type { Config } from '../../config.js'
import type { Database } from '../../db/database.js'

/** What the event services need (not Deps: deps.ts builds them). */
export interface EventDeps {
  db: Kysely<Database>
  config: Readonly<Config>
}

/** Every event type a webhook endpoint may subscribe to (docs/api.md, "Webhooks"). */
export const EVENT_TYPES = [
  'payment.served',
  'payment.settled',
  'payment.failed',
  'payment.voided',
  'agent.cap_reached',
  'agent.cap_near',
  'agent.balance_low',
  'topup.completed',
  'topup.failed',
  'withdrawal.confirmed',
  'withdrawal.failed',
  'approval.requested',
  'revenue.settled',
  'voucher.collected',
] as const

export type EventType = (typeof EVENT_TYPES)[number]

/** Notices to the user that no endpoint subscribes to: an endpoint disabled after 3 days of failures. */
export type NoticeType = 'webhook.disabled'

/** The type a "send test event" delivers; not subscribable, always sent to the endpoint tested. */
export const TEST_EVENT_TYPE = 'webhook.test'

/** Alerts (issue 38 item 3): also emailed to the user and listed on the dashboard's overview. */
export const ALERT_TYPES: ReadonlySet<string> = new Set([
  'approval.requested',
  'agent.cap_reached',
  'agent.cap_near',
  'agent.balance_low',
  'payment.failed',
  'topup.failed',
  'withdrawal.failed',
  'webhook.disabled',
])

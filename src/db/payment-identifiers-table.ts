import type { ColumnType } from 'kysely'

type Timestamp = ColumnType<Date, Date | string, Date | string>

/** x402 `payment-identifier` keys, one per (payer, id) (migration 2026-11-26T0700). */
export interface PaymentIdentifiersTable {
  payer: string
  payment_identifier: string
  /** sha256 of what makes the paid request unique (payment-identifier-store.ts) */
  fingerprint: string
  /** the payment of the call made for this id (payments.id once it is written) */
  payment_id: string
  /** while set and ahead: a call for this id is running */
  claimed_until: Timestamp | null
  expires_at: Timestamp
  answer_status: number | null
  answer_content_type: string | null
  answer_body: Buffer | null
  created_at: ColumnType<Date, Date | string | undefined, never>
}

import type { ColumnType, Generated } from 'kysely'

/** Buyer-side payments (migration 0840). */
export type AgentPaymentStatus = 'reserved' | 'accepted' | 'rejected' | 'expired'

type Numeric = ColumnType<string, string | bigint, string | bigint>
type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>

export interface AgentPaymentsTable {
  id: Generated<string>
  agent_id: string
  status: AgentPaymentStatus
  x402_version: number
  url: string
  method: string
  network: string
  asset: string
  payer: string
  pay_to: string
  amount: Numeric
  /** `exact` (an EIP-3009 authorization) or `deferred` (a voucher: `nonce` is its EIP-712 digest) */
  scheme: ColumnType<'exact' | 'deferred', 'exact' | 'deferred' | undefined, never>
  nonce: string
  valid_after: ColumnType<string, string | number | bigint, never>
  valid_before: ColumnType<string, string | number | bigint, never>
  /** UTC `YYYY-MM-DD` the amount counts against */
  day_window: string
  /** UTC `YYYY-MM` */
  month_window: string
  tx_hash: string | null
  payment_response: ColumnType<unknown, string | null | undefined, string | null> | null
  created_at: Timestamp
  updated_at: Timestamp
}

export interface AgentPaymentEventsTable {
  id: Generated<string>
  agent_payment_id: string
  /** sending | accepted | rejected | error | expired | spent_late */
  type: string
  data: ColumnType<unknown, string | null | undefined, never> | null
  created_at: Timestamp
}

import type { ColumnType, Generated } from 'kysely'

/** Human approval of held agent payments (migrations/2026-11-28T1320-approvals.ts). */
export type ApprovalStatus = 'pending' | 'approved' | 'denied' | 'expired' | 'used'
export type ApprovalReason = 'amount' | 'new_seller_rate'
export type ApprovalVia = 'api_key' | 'session' | 'link'

type Numeric = ColumnType<string, string | bigint, string | bigint>
type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>

export interface ApprovalsTable {
  id: Generated<string>
  agent_id: string
  user_id: string
  url: string
  method: string
  /** lower-case */
  pay_to: string
  amount: Numeric
  /** batch-settlement: what the payment would deposit into the agent's channel when held (shown, not matched) */
  deposit: ColumnType<string | null, string | bigint | null | undefined, string | bigint | null>
  scheme: string
  network: string
  reason: ApprovalReason
  status: ColumnType<ApprovalStatus, ApprovalStatus | undefined, ApprovalStatus>
  /** the user who decided (the agent's owner) */
  decided_by: string | null
  decided_via: ApprovalVia | null
  decided_at: Date | null
  decided_ip: string | null
  decided_user_agent: string | null
  expires_at: Timestamp
  used_at: Date | null
  agent_payment_id: string | null
  /** the signed answer of the retry that used it, encrypted with the master key (aad `approval:<id>`) */
  signed_payment: string | null
  created_at: Timestamp
}

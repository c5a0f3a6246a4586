import type { ColumnType, Generated, Selectable } from 'kysely'

type Numeric = ColumnType<string, string | bigint, string | bigint>
type BigIntCol = ColumnType<string, string | number | bigint, string | number | bigint>
type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>

export type WithdrawalStatus = 'pending' | 'confirmed' | 'failed'
export type WithdrawalSource = 'agent' | 'funding_wallet'
export type WithdrawalAsset = 'USDC' | 'ETH'

/** One withdrawal per (user_id, idempotency_key) (migration 2026-11-24T0900). */
export interface WithdrawalsTable {
  id: Generated<string>
  user_id: string
  agent_id: string | null
  source: WithdrawalSource
  from_address: string
  to_address: string
  asset: WithdrawalAsset
  amount: Numeric
  status: ColumnType<WithdrawalStatus, WithdrawalStatus | undefined, WithdrawalStatus>
  idempotency_key: string
  request_hash: string
  auth_nonce: string | null
  valid_after: BigIntCol | null
  valid_before: BigIntCol | null
  signature: string | null
  tx_nonce: BigIntCol | null
  raw_tx: string | null
  relayer: string | null
  tx_hash: string | null
  confirmed_block: BigIntCol | null
  attempts: ColumnType<number, number | undefined, number>
  next_attempt_at: Timestamp
  locked_until: Date | string | null
  error: string | null
  created_at: Timestamp
  updated_at: Timestamp
  confirmed_at: Date | string | null
}

export interface WithdrawalEventsTable {
  id: Generated<string>
  withdrawal_id: string
  /** created | submitted | attempt_failed | confirmed | failed */
  type: string
  from_status: WithdrawalStatus | null
  to_status: WithdrawalStatus | null
  reason: string | null
  data: ColumnType<unknown, string | null | undefined, never> | null
  created_at: Timestamp
}

export type Withdrawal = Selectable<WithdrawalsTable>

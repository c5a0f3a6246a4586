import type { ColumnType, Generated, Selectable } from 'kysely'

type Numeric = ColumnType<string, string | bigint, string | bigint>
type BigIntCol = ColumnType<string, string | number | bigint, string | number | bigint>
type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>

export type TopupStatus = 'pending' | 'submitted' | 'confirmed' | 'failed'

/** One top-up per (agent_id, need_seq) (migration 0850). */
export interface TopupsTable {
  id: Generated<string>
  agent_id: string
  need_seq: number
  status: ColumnType<TopupStatus, TopupStatus | undefined, TopupStatus>
  agent_address: string
  funding_address: string | null
  amount: Numeric
  threshold: Numeric
  balance_seen: Numeric
  block_seen: BigIntCol
  auth_nonce: string | null
  valid_after: BigIntCol | null
  valid_before: BigIntCol | null
  signature: string | null
  relayer: string | null
  tx_hash: string | null
  confirmed_block: BigIntCol | null
  attempts: ColumnType<number, number | undefined, number>
  next_attempt_at: Timestamp
  locked_until: Date | string | null
  error: string | null
  created_at: Timestamp
  updated_at: Timestamp
}

export type Topup = Selectable<TopupsTable>

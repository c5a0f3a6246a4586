import type { ColumnType, Generated } from 'kysely'

/** Facilitator-mode settlements (migrations/2026-11-28T2000-facilitator-settlements.ts). */
type FacilitatorSettlementStatus = 'pending' | 'settled' | 'failed'

/** what a batch-settlement facilitator transaction does */
export type FacilitatorBatchAction = 'deposit' | 'claim' | 'settle' | 'refund'

type Numeric = ColumnType<string, string | bigint, string | bigint>
type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>

export interface FacilitatorSettlementsTable {
  id: Generated<string>
  /** the user whose API key asked for the settle: the relayer gas is theirs */
  user_id: string
  scheme: string
  /** batch-settlement: deposit, claim, settle or refund (migrations/2026-11-29T0000-facilitator-batch.ts); exact: null */
  action: ColumnType<FacilitatorBatchAction | null, FacilitatorBatchAction | null | undefined, never>
  /** CAIP-2 */
  network: string
  /** lower-case */
  asset: string
  /** lower-case */
  payer: string
  /** lower-case */
  pay_to: string
  value: Numeric
  /** lower-case bytes32 */
  nonce: string
  signature: string
  status: ColumnType<FacilitatorSettlementStatus, FacilitatorSettlementStatus | undefined, FacilitatorSettlementStatus>
  tx_hash: string | null
  gas_used: Numeric | null
  effective_gas_price: Numeric | null
  /** the SettleResponse answered (a repeat of the same payload gets it again) */
  response: ColumnType<unknown, string | undefined, string>
  created_at: Timestamp
  updated_at: Timestamp
}

/** A channel whose deposit a seller's key settled through the facilitator: that seller's. */
export interface FacilitatorBatchChannelsTable {
  /** lower-case bytes32 */
  channel_id: string
  network: string
  user_id: string
  /** lower-case */
  receiver: string
  /** lower-case */
  token: string
  /** lower-case */
  receiver_authorizer: string
  created_at: Timestamp
}

import type { ColumnType, Generated } from 'kysely'

/** Buyer-side payments (migration 0840). */
type AgentScheme = 'exact' | 'deferred' | 'upto' | 'batch-settlement'
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
  /**
   * `exact` (an EIP-3009 authorization), `deferred` (a voucher: `nonce` is its EIP-712 digest) or
   * `upto` (a Permit2 authorization for `max_amount`: `nonce` is the Permit2 nonce as 32-byte hex)
   */
  scheme: ColumnType<AgentScheme, AgentScheme | undefined, never>
  /** upto: the maximum signed (and reserved at first); `amount` becomes the actual charge once known */
  max_amount: ColumnType<string | null, string | bigint | null | undefined, string | bigint | null>
  /**
   * deferred: the voucher's id (0x hex) and aggregate, which decide what a later voucher supersedes;
   * batch-settlement: the channel id and the voucher's cumulative maxClaimableAmount
   */
  voucher_id: ColumnType<string | null, string | null | undefined, string | null>
  value_aggregate: ColumnType<string | null, string | bigint | null | undefined, string | bigint | null>
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

/** The batch-settlement channels the platform opened for an agent wallet (migration 2026-11-28T1700). */
export interface AgentChannelsTable {
  /** 0x hex, lower-case: the EIP-712 hash of the config below */
  channel_id: string
  agent_id: string
  network: string
  payer: string
  receiver: string
  receiver_authorizer: string
  token: string
  withdraw_delay: number
  salt: string
  /** what the platform signed deposits for (the server's channel row has what arrived) */
  deposited: ColumnType<string, string | bigint | undefined, string | bigint>
  /** the highest cumulative maxClaimableAmount signed on the channel */
  signed_max_claimable: ColumnType<string, string | bigint | undefined, string | bigint>
  created_at: Timestamp
  updated_at: Timestamp
}

/**
 * A deposit authorization the platform signed from an agent wallet (migration 2026-11-29T0100):
 * counted in the wallet's unsettled total until the chain says it was used or it expired unused.
 */
export interface AgentDepositHoldsTable {
  /** lower-case wallet address */
  payer: string
  /** the ERC-3009 authorization's nonce (0x hex, lower-case), as signed */
  nonce: string
  /** the nonce of the hold's member in the wallet's unsettled set (taken before signing) */
  hold_nonce: string
  channel_id: string
  amount: Numeric
  /** the authorization's validBefore (unix s), as signed */
  valid_before: ColumnType<string, string | number | bigint, never>
  created_at: Timestamp
  released_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>
}

/** An agent channel's timed withdrawal (migration 2026-11-29T0300): one per channel. */
type AgentChannelWithdrawalStatus = 'initiating' | 'waiting' | 'finalizing' | 'withdrawn'

export interface AgentChannelWithdrawalsTable {
  id: Generated<string>
  channel_id: string
  agent_id: string
  /** initiating / finalizing: that transaction is recorded and maybe in flight; waiting: initiated, the delay runs */
  status: AgentChannelWithdrawalStatus
  /** what initiateWithdraw asked for (the channel's balance less what was claimed then) */
  amount: Numeric
  initiate_tx: string | null
  initiate_raw_tx: string | null
  initiate_nonce: ColumnType<string | null, string | number | null | undefined, string | number | null>
  /** the chain's time of the block that mined initiateWithdraw */
  initiated_at: Date | null
  finalize_after: Date | null
  finalize_tx: string | null
  finalize_raw_tx: string | null
  finalize_nonce: ColumnType<string | null, string | number | null | undefined, string | number | null>
  /** what finalizeWithdraw returned to the wallet */
  withdrawn: ColumnType<string | null, string | bigint | null | undefined, string | bigint | null>
  requested_at: Timestamp
  updated_at: Timestamp
}

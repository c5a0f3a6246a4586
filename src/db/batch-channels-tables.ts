import type { ColumnType } from 'kysely'

type Numeric = ColumnType<string, string | bigint | undefined, string | bigint>
type Stamp = ColumnType<Date, Date | string | undefined, Date | string>
type MaybeStamp = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>

/** A `batch-settlement` channel: the server's state of it (migration 2026-11-28T1300). Addresses lower-case. */
export interface BatchChannelsTable {
  /** the EIP-712 hash of the channel's config, 0x-hex lower-case */
  channel_id: string
  network: string
  /** the x402BatchSettlement contract the channel lives in */
  contract: string
  payer: string
  payer_authorizer: string
  receiver: string
  receiver_authorizer: string
  token: string
  withdraw_delay: number
  salt: string
  /** chargedCumulativeAmount: what the served calls cost, in all */
  charged: Numeric
  /** the latest client-signed voucher's maxClaimableAmount, and its signature */
  signed_max_claimable: Numeric
  signature: string | null
  /** mirrored from the chain */
  balance: Numeric
  total_claimed: Numeric
  withdraw_requested_at: MaybeStamp
  refund_nonce: Numeric
  onchain_synced_at: MaybeStamp
  last_request_at: MaybeStamp
  /** the first served call not yet claimed on chain; null when everything charged is claimed */
  oldest_unclaimed_at: MaybeStamp
  created_at: ColumnType<Date, Date | string | undefined, never>
  updated_at: Stamp
}

/** A deposit, claim, settle or refund transaction, recorded before it is broadcast. */
export interface BatchTransactionsTable {
  id: string
  kind: 'deposit' | 'claim' | 'settle' | 'refund'
  network: string
  contract: string
  relayer: string | null
  tx_nonce: number | null
  tx_hash: string | null
  status: ColumnType<
    'pending' | 'sent' | 'confirmed' | 'reverted' | 'dropped',
    'pending' | 'sent' | 'confirmed' | 'reverted' | 'dropped' | undefined,
    'pending' | 'sent' | 'confirmed' | 'reverted' | 'dropped'
  >
  /** for a claim: [{channelId, maxClaimableAmount, totalClaimed}]; for the others: the channels it touches */
  channels: ColumnType<unknown, string | undefined, string>
  amount: Numeric
  error: string | null
  created_at: ColumnType<Date, Date | string | undefined, never>
  updated_at: Stamp
}

/** A key the platform holds for a purpose, e.g. 'batch-receiver-authorizer'; encrypted like wallet keys. */
export interface PlatformKeysTable {
  purpose: string
  /** lower-case address */
  address: string
  encrypted_key: string
  created_at: ColumnType<Date, Date | string | undefined, never>
}

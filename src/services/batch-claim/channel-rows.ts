/**
 * The worker's reads and writes of `batch_channels`: which channels to watch and claim, and the
 * chain's state mirrored into them. The scheme's hot path writes `charged`, `signed_max_claimable`,
 * `signature` and `oldest_unclaimed_at`; this side writes only the mirrored chain fields, and clears
 * `oldest_unclaimed_at` in the same statement that reads `charged`, so a call charged meanwhile is
 * never forgotten.
 */
import { sql, type Kysely } from 'kysely'
import type { Address, Hex } from 'viem'
import type { Database } from '../../db/database.js'
import type { OnchainChannel } from '../../chain/batch-settlement/channel.js'

export interface ChannelRow {
  channel_id: string
  payer: string
  payer_authorizer: string
  receiver: string
  receiver_authorizer: string
  token: string
  withdraw_delay: number
  salt: string
  charged: string
  signed_max_claimable: string
  signature: string | null
  balance: string
  total_claimed: string
  withdraw_requested_at: Date | null
  refund_nonce: string
  oldest_unclaimed_at: Date | null
}

const COLUMNS = [
  'channel_id',
  'payer',
  'payer_authorizer',
  'receiver',
  'receiver_authorizer',
  'token',
  'withdraw_delay',
  'salt',
  'charged',
  'signed_max_claimable',
  'signature',
  'balance',
  'total_claimed',
  'withdraw_requested_at',
  'refund_nonce',
  'oldest_unclaimed_at',
] as const

/**
 * Channels whose chain state matters: something charged and unclaimed, funds left in escrow, or a
 * withdrawal pending (its end is read back even when everything is claimed: the proxy refuses the
 * channel's vouchers until then).
 */
export async function watchedChannels(
  db: Kysely<Database>,
  where: { network: string; contract: Address },
  limit: number,
): Promise<ChannelRow[]> {
  return db
    .selectFrom('batch_channels')
    .select(COLUMNS)
    .where('network', '=', where.network)
    .where('contract', '=', where.contract.toLowerCase())
    .where((eb) =>
      eb.or([
        eb('charged', '>', eb.ref('total_claimed')),
        eb('balance', '>', eb.ref('total_claimed')),
        eb('withdraw_requested_at', 'is not', null),
      ]),
    )
    .orderBy('oldest_unclaimed_at', (ob) => ob.asc().nullsLast())
    .limit(limit)
    .execute()
}

/**
 * Channels due a claim: charged above what is claimed, a voucher to claim with, receiverAuthorizer
 * ours, and a withdrawal started, or the oldest unclaimed call `maxAgeSeconds` old, or the unclaimed
 * charge at `threshold` (or `force`). Withdrawing channels first, then the oldest.
 */
export async function dueChannels(
  db: Kysely<Database>,
  where: { network: string; contract: Address; authorizer: Address },
  rule: { threshold: bigint; maxAgeSeconds: number; force: boolean },
  limit: number,
): Promise<ChannelRow[]> {
  const r = await sql<ChannelRow>`
    select ${sql.join(COLUMNS.map((c) => sql.ref(c)))}
    from batch_channels
    where network = ${where.network} and contract = ${where.contract.toLowerCase()}
      and receiver_authorizer = ${where.authorizer.toLowerCase()}
      and charged > total_claimed and signature is not null
      and (${rule.force} or withdraw_requested_at is not null
        or oldest_unclaimed_at <= now() - ${`${rule.maxAgeSeconds} seconds`}::interval
        or charged - total_claimed >= ${rule.threshold.toString()}::numeric)
    order by (withdraw_requested_at is null), oldest_unclaimed_at nulls last
    limit ${limit}`.execute(db)
  return r.rows
}

/** Whether the chain says something the row does not (so a write is needed). */
export function chainDiffers(row: ChannelRow, state: OnchainChannel): boolean {
  const requested = row.withdraw_requested_at ? Math.floor(row.withdraw_requested_at.getTime() / 1000) : 0
  return (
    BigInt(row.balance) !== state.balance ||
    BigInt(row.total_claimed) < state.totalClaimed ||
    BigInt(row.refund_nonce) !== state.refundNonce ||
    requested !== state.withdrawRequestedAt ||
    (row.oldest_unclaimed_at !== null && BigInt(row.charged) <= BigInt(row.total_claimed))
  )
}

/**
 * Mirrors a channel's chain state. total_claimed only grows; oldest_unclaimed_at is cleared when
 * everything charged is claimed (evaluated against the row's current `charged`).
 */
export async function mirrorChain(db: Kysely<Database>, channelId: Hex, state: OnchainChannel): Promise<void> {
  const claimed = state.totalClaimed.toString()
  await sql`
    update batch_channels set
      balance = ${state.balance.toString()}::numeric,
      total_claimed = greatest(total_claimed, ${claimed}::numeric),
      refund_nonce = ${state.refundNonce.toString()}::numeric,
      withdraw_requested_at = ${state.withdrawRequestedAt > 0 ? new Date(state.withdrawRequestedAt * 1000) : null},
      oldest_unclaimed_at = case when charged <= greatest(total_claimed, ${claimed}::numeric) then null
                                 else oldest_unclaimed_at end,
      onchain_synced_at = now(),
      updated_at = now()
    where channel_id = ${channelId.toLowerCase()}`.execute(db)
}

/** The (receiver, token) pairs of this contract's channels with something claimed. */
export async function claimedPairs(
  db: Kysely<Database>,
  where: { network: string; contract: Address },
): Promise<Array<{ receiver: string; token: string }>> {
  return db
    .selectFrom('batch_channels')
    .select(['receiver', 'token'])
    .distinct()
    .where('network', '=', where.network)
    .where('contract', '=', where.contract.toLowerCase())
    .where('total_claimed', '>', '0')
    .execute()
}

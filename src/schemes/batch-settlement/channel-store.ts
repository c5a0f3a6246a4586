/**
 * The durable side of `batch-settlement` channels (Postgres, tables `batch_channels` and
 * `batch_transactions`, migration 2026-11-28T1300): the truth the Redis copies
 * (channel-state.ts) are loaded from.
 *
 * A served call's charge is written by the ledger's group commit with its payment row
 * (src/ledger/ledger-writer.ts, `channel`); here: reading a channel, opening it at its first
 * deposit, the record-first path's own compare-and-set, and the deposit transactions, each
 * recorded before it is broadcast.
 */
import { randomUUID } from 'node:crypto'
import { sql, type Kysely } from 'kysely'
import type { Database } from '../../db/database.js'
import type { ChannelSnapshot } from './channel-state.js'
import type { ChannelConfig } from './typed-data.js'

export function createChannelStore(db: Kysely<Database>) {
  return {
    /** The stored state of a channel, undefined when the server has none. */
    read: (channelId: string) => readChannel(db, channelId),
    /**
     * The channel as the server knows it from now on (its first deposit, or a channel found on
     * chain with no record here: the spec's baseline, charged = totalClaimed); an existing row
     * only takes the chain's newer balance and totalClaimed.
     */
    open: (a: OpenChannel, chain: { balance: bigint; totalClaimed: bigint }) => openChannel(db, a, chain),
    /** Record-first calls: the charge moved after the answer (compare-and-set); false when it had moved. */
    charge: (channelId: string, expected: bigint, value: bigint, voucher: { signedMax: bigint; signature: string }) =>
      chargeChannel(db, channelId, expected, value, voucher),
    /** A deposit transaction, recorded before it is broadcast; returns its id. */
    depositPending: (a: { network: string; contract: string; channelId: string; amount: bigint }) =>
      depositPending(db, a),
    depositMoved: (id: string, to: DepositMove) => depositMoved(db, id, to),
    /** A cooperative refund transaction, signed and recorded (hash, relayer, nonce) before it is broadcast. */
    refundPending: (a: RefundRecord) => refundPending(db, a),
    /** A refund decided from its receipt: its row (the amount the `Refunded` event says) and the channel's mirrored fields. */
    refundDecided: (a: RefundDecision) => refundDecided(db, a),
  }
}

export type ChannelStore = ReturnType<typeof createChannelStore>

export interface OpenChannel {
  channelId: string
  network: string
  contract: string
  config: ChannelConfig
}

export interface DepositMove {
  status: 'sent' | 'confirmed' | 'reverted' | 'dropped'
  txHash?: string
  relayer?: string
  error?: string
}

export interface RefundRecord {
  id: string
  network: string
  contract: string
  channelId: string
  /** the amount asked of the contract (capped by it to what is unclaimed) */
  amount: bigint
  txHash: string
  relayer: string
  txNonce: number
}

export interface RefundDecision {
  id: string
  channelId: string
  status: 'confirmed' | 'reverted'
  /** what the receipt's `Refunded` event returned to the payer */
  refunded: bigint
  chain: { balance: bigint; totalClaimed: bigint; refundNonce: bigint; withdrawRequestedAt: number }
}

async function refundPending(db: Kysely<Database>, a: RefundRecord): Promise<void> {
  await db
    .insertInto('batch_transactions')
    .values({
      id: a.id,
      kind: 'refund',
      network: a.network,
      contract: a.contract,
      relayer: a.relayer.toLowerCase(),
      tx_nonce: a.txNonce,
      tx_hash: a.txHash,
      status: 'pending',
      channels: JSON.stringify([{ channelId: a.channelId }]),
      amount: a.amount,
    })
    .execute()
}

async function refundDecided(db: Kysely<Database>, a: RefundDecision): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await trx
      .updateTable('batch_transactions')
      .set({ status: a.status, amount: a.refunded.toString(), updated_at: new Date() })
      .where('id', '=', a.id)
      .where('status', 'in', ['pending', 'sent'])
      .execute()
    const c = a.chain
    const claimed = c.totalClaimed.toString()
    await sql`update batch_channels set
        balance = ${c.balance.toString()}::numeric,
        total_claimed = greatest(total_claimed, ${claimed}::numeric),
        refund_nonce = ${c.refundNonce.toString()}::numeric,
        withdraw_requested_at = ${c.withdrawRequestedAt > 0 ? new Date(c.withdrawRequestedAt * 1000) : null},
        oldest_unclaimed_at = case when charged <= greatest(total_claimed, ${claimed}::numeric) then null
                                   else oldest_unclaimed_at end,
        onchain_synced_at = now(), updated_at = now()
      where channel_id = ${a.channelId}`.execute(trx)
  })
}

async function readChannel(db: Kysely<Database>, channelId: string): Promise<ChannelSnapshot | undefined> {
  const r = await db
    .selectFrom('batch_channels')
    .select([
      'charged',
      'signed_max_claimable',
      'signature',
      'balance',
      'total_claimed',
      'withdraw_requested_at',
      'refund_nonce',
    ])
    .where('channel_id', '=', channelId)
    .executeTakeFirst()
  if (!r) return undefined
  return {
    charged: BigInt(r.charged),
    signedMax: BigInt(r.signed_max_claimable),
    signature: r.signature ?? '',
    balance: BigInt(r.balance),
    totalClaimed: BigInt(r.total_claimed),
    withdrawRequestedAt: r.withdraw_requested_at ? Math.floor(r.withdraw_requested_at.getTime() / 1000) : 0,
    refundNonce: BigInt(r.refund_nonce),
  }
}

async function openChannel(
  db: Kysely<Database>,
  a: OpenChannel,
  chain: { balance: bigint; totalClaimed: bigint },
): Promise<void> {
  const c = a.config
  await db
    .insertInto('batch_channels')
    .values({
      channel_id: a.channelId,
      network: a.network,
      contract: a.contract,
      payer: c.payer,
      payer_authorizer: c.payerAuthorizer,
      receiver: c.receiver,
      receiver_authorizer: c.receiverAuthorizer,
      token: c.token,
      withdraw_delay: c.withdrawDelay,
      salt: c.salt,
      charged: chain.totalClaimed,
      signed_max_claimable: chain.totalClaimed,
      balance: chain.balance,
      total_claimed: chain.totalClaimed,
      onchain_synced_at: new Date(),
    })
    .onConflict((oc) =>
      oc.column('channel_id').doUpdateSet({
        balance: chain.balance,
        total_claimed: sql`greatest(batch_channels.total_claimed, ${chain.totalClaimed.toString()}::numeric)`,
        onchain_synced_at: new Date(),
        updated_at: new Date(),
      }),
    )
    .execute()
}

async function chargeChannel(
  db: Kysely<Database>,
  channelId: string,
  expected: bigint,
  value: bigint,
  voucher: { signedMax: bigint; signature: string },
): Promise<boolean> {
  const r = await sql`update batch_channels set charged = charged + ${value.toString()}::numeric,
      signed_max_claimable = ${voucher.signedMax.toString()}::numeric, signature = ${voucher.signature},
      last_request_at = now(), updated_at = now(),
      oldest_unclaimed_at = case when charged + ${value.toString()}::numeric > total_claimed
        then coalesce(oldest_unclaimed_at, now()) else oldest_unclaimed_at end
    where channel_id = ${channelId} and charged = ${expected.toString()}::numeric`.execute(db)
  return Number(r.numAffectedRows ?? 0) === 1
}

async function depositPending(
  db: Kysely<Database>,
  a: { network: string; contract: string; channelId: string; amount: bigint },
): Promise<string> {
  const id = randomUUID()
  await db
    .insertInto('batch_transactions')
    .values({
      id,
      kind: 'deposit',
      network: a.network,
      contract: a.contract,
      channels: JSON.stringify([{ channelId: a.channelId }]),
      amount: a.amount,
    })
    .execute()
  return id
}

async function depositMoved(db: Kysely<Database>, id: string, to: DepositMove): Promise<void> {
  await db
    .updateTable('batch_transactions')
    .set({
      status: to.status,
      ...(to.txHash ? { tx_hash: to.txHash } : {}),
      ...(to.relayer ? { relayer: to.relayer } : {}),
      ...(to.error ? { error: to.error.slice(0, 500) } : {}),
      updated_at: new Date(),
    })
    .where('id', '=', id)
    .execute()
}

/**
 * The `deferred` scheme's voucher store in Postgres (table `deferred_vouchers`): every voucher
 * accepted for a call; the head of a voucher id is its highest nonce (no stored flag).
 *
 * Vouchers are written with their payment rows by the ledger's group commit
 * (src/ledger/ledger-writer.ts), after the hot path reserved them in Redis (voucher-heads.ts, which
 * applies `checkAggregation`); the unique (voucher id, nonce) index is the last word on a
 * duplicate nonce. Here: the latest head a buyer aggregates onto, and `giveBack` for a voucher
 * written before a call that then failed.
 */
import { sql, type Kysely, type Selectable, type Transaction } from 'kysely'
import type { Address, Hex } from 'viem'
import type { Database, DeferredVouchersTable } from '../../db/database.js'
import type { ReasonCode } from '../../x402/reasons.js'
import type { DeferredVoucher } from './typed-data.js'

/** The (escrow, buyer, seller, asset) a buyer's vouchers to one seller belong to. */
export interface VoucherTuple {
  escrow: Address
  buyer: Address
  seller: Address
  asset: Address
}

/** A stored voucher, as the challenge shows it (`extra.voucher`) and collection sends it. */
export interface StoredVoucher {
  voucher: DeferredVoucher
  signature: Hex
  /** what the escrow paid for this voucher id, as last read */
  collected: bigint
}

async function lockTuple(trx: Transaction<Database>, t: VoucherTuple): Promise<void> {
  await sql`select pg_advisory_xact_lock(hashtextextended(${`deferred:${t.escrow}:${t.buyer}:${t.seller}:${t.asset}`}, 0))`.execute(
    trx,
  )
}

/**
 * The aggregation rules of coinbase/x402 `scheme_deferred_evm.md` ("Verification", 3 and 4) against
 * the stored head of the voucher's id; undefined when the voucher continues it.
 */
export function checkAggregation(
  head: { nonce: bigint; valueAggregate: bigint; timestamp: bigint } | undefined,
  v: DeferredVoucher,
  amount: bigint,
): { reason: ReasonCode; message: string } | undefined {
  if (!head) {
    if (v.valueAggregate !== amount)
      return {
        reason: 'invalid_deferred_evm_payload_voucher_value',
        message: `a new voucher (id not seen before) must have valueAggregate ${amount} (the price), got ${v.valueAggregate}`,
      }
    return undefined
  }
  if (v.nonce !== head.nonce + 1n) {
    return {
      reason: 'invalid_deferred_evm_payload_voucher_stale',
      message: `voucher ${v.id} is at nonce ${head.nonce}; the next voucher must have nonce ${head.nonce + 1n}, got ${v.nonce}`,
    }
  }
  if (v.valueAggregate !== head.valueAggregate + amount) {
    return {
      reason: 'invalid_deferred_evm_payload_voucher_value',
      message: `expected valueAggregate ${head.valueAggregate + amount} (previous ${head.valueAggregate} + price ${amount}), got ${v.valueAggregate}`,
    }
  }
  if (v.timestamp <= head.timestamp) {
    return {
      reason: 'invalid_deferred_evm_payload_voucher_timestamp',
      message: `the previous voucher has timestamp ${head.timestamp}; got ${v.timestamp}`,
    }
  }
  return undefined
}

/** A voucher given back: its tuple, id and digest, and the nonce of the head it replaced. */
interface GivenBack {
  tuple: VoucherTuple
  voucherId: Hex
  digest: Hex
  previousNonce: bigint | undefined
}

/** Deletes the given-back voucher while it is its id's head and no payment that is not voided holds its digest. */
function deleteHead(trx: Transaction<Database>, a: GivenBack) {
  const t = a.tuple
  return (
    trx
      .deleteFrom('deferred_vouchers')
      .where('escrow', '=', t.escrow)
      .where('buyer', '=', t.buyer)
      .where('seller', '=', t.seller)
      .where('asset', '=', t.asset)
      .where('voucher_id', '=', a.voucherId)
      .where('digest', '=', a.digest)
      // while it is its id's head: no higher nonce stored
      .where(({ not, exists, selectFrom }) =>
        not(
          exists(
            selectFrom('deferred_vouchers as h')
              .select('h.id')
              .whereRef('h.escrow', '=', 'deferred_vouchers.escrow')
              .whereRef('h.buyer', '=', 'deferred_vouchers.buyer')
              .whereRef('h.seller', '=', 'deferred_vouchers.seller')
              .whereRef('h.asset', '=', 'deferred_vouchers.asset')
              .whereRef('h.voucher_id', '=', 'deferred_vouchers.voucher_id')
              .whereRef('h.nonce', '>', 'deferred_vouchers.nonce'),
          ),
        ),
      )
      .where(({ not, exists, selectFrom }) =>
        not(
          exists(
            selectFrom('payments')
              .select('payments.id')
              .where('payments.payer', '=', t.buyer)
              .where('payments.nonce', '=', a.digest)
              .where('payments.status', '<>', 'voided'),
          ),
        ),
      )
      .returning('collected')
      .executeTakeFirst()
  )
}

/** A stored voucher row as the typed voucher it was signed as (the chain id is not stored). */
export function voucherOfRow(
  r: Pick<
    Selectable<DeferredVouchersTable>,
    'voucher_id' | 'buyer' | 'seller' | 'value_aggregate' | 'asset' | 'timestamp' | 'nonce' | 'escrow'
  >,
  chainId: bigint,
): DeferredVoucher {
  return {
    id: r.voucher_id as Hex,
    buyer: r.buyer as Address,
    seller: r.seller as Address,
    valueAggregate: BigInt(r.value_aggregate),
    asset: r.asset as Address,
    timestamp: BigInt(r.timestamp),
    nonce: BigInt(r.nonce),
    escrow: r.escrow as Address,
    chainId,
  }
}

/** The most recent head of the tuple (the voucher a buyer aggregates onto next), if any. */
async function latestVoucher(
  db: Kysely<Database>,
  t: VoucherTuple,
  chainId: bigint,
): Promise<StoredVoucher | undefined> {
  const r = await db
    .selectFrom('deferred_vouchers')
    .selectAll()
    .where('escrow', '=', t.escrow)
    .where('buyer', '=', t.buyer)
    .where('seller', '=', t.seller)
    .where('asset', '=', t.asset)
    // the tuple's most recent voucher (deferred_vouchers_tuple_recent_idx): the head of the id used last
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst()
  if (!r) return undefined
  return {
    voucher: voucherOfRow(r, chainId),
    signature: r.signature as Hex,
    collected: BigInt(r.collected),
  }
}

/**
 * Stores a voucher without a payment (the facilitator's `POST /deferred/vouchers`), after the
 * hot path's verify and reserve: inserted as the ledger statement inserts it, carrying the id's
 * `collected`. False (nothing written) when its (id, nonce) or digest is stored already or a
 * higher nonce of its id is.
 */
async function storeVoucherAlone(
  db: Kysely<Database>,
  v: DeferredVoucher,
  signature: Hex,
  digest: Hex,
): Promise<boolean> {
  const t: VoucherTuple = { escrow: v.escrow, buyer: v.buyer, seller: v.seller, asset: v.asset }
  return db.transaction().execute(async (trx) => {
    await lockTuple(trx, t)
    const r = await sql<{ id: string }>`
      insert into deferred_vouchers (escrow, buyer, seller, asset, voucher_id, nonce, value_aggregate, timestamp,
                                     signature, digest, collected)
      select ${t.escrow}, ${t.buyer}, ${t.seller}, ${t.asset}, ${v.id}, ${v.nonce.toString()}::numeric,
        ${v.valueAggregate.toString()}::numeric, ${v.timestamp.toString()}::int8, ${signature}, ${digest},
        coalesce((select d.collected from deferred_vouchers d where d.escrow = ${t.escrow} and d.buyer = ${t.buyer}
          and d.seller = ${t.seller} and d.asset = ${t.asset} and d.voucher_id = ${v.id}
          order by d.nonce desc limit 1), 0)
      where not exists (select 1 from deferred_vouchers d where d.escrow = ${t.escrow} and d.buyer = ${t.buyer}
          and d.seller = ${t.seller} and d.asset = ${t.asset} and d.voucher_id = ${v.id}
          and d.nonce >= ${v.nonce.toString()}::numeric)
      on conflict do nothing
      returning id`.execute(trx)
    return r.rows.length > 0
  })
}

/**
 * Gives a voucher written with its payment back (a record-first call that failed): removed while
 * it is its id's head and no payment that is not voided holds its digest, and the head it
 * replaced restored. A buyer who already aggregated onto it keeps it (the newer voucher includes
 * its value, signed by the buyer). True when a row was removed.
 */
async function giveBackVoucher(db: Kysely<Database>, a: GivenBack): Promise<boolean> {
  const t = a.tuple
  return db.transaction().execute(async (trx) => {
    await lockTuple(trx, t)
    const gone = await deleteHead(trx, a)
    if (!gone) return false
    if (a.previousNonce !== undefined) {
      await trx
        .updateTable('deferred_vouchers')
        .set({ collected: gone.collected })
        .where('escrow', '=', t.escrow)
        .where('buyer', '=', t.buyer)
        .where('seller', '=', t.seller)
        .where('asset', '=', t.asset)
        .where('voucher_id', '=', a.voucherId)
        .where('nonce', '=', a.previousNonce.toString())
        .execute()
    }
    return true
  })
}

export function createVoucherStore(db: Kysely<Database>) {
  return {
    latest: (t: VoucherTuple, chainId: bigint) => latestVoucher(db, t, chainId),
    storeAlone: (v: DeferredVoucher, signature: Hex, digest: Hex) => storeVoucherAlone(db, v, signature, digest),
    giveBack: (a: GivenBack) => giveBackVoucher(db, a),
  }
}

export type VoucherStore = ReturnType<typeof createVoucherStore>

/**
 * The heads of a tuple: per voucher id, its highest nonce (`distinct on` over the unique
 * (escrow, buyer, seller, asset, voucher_id, nonce) index). Add the columns with `.select`.
 */
export function headsOf(db: Kysely<Database>, t: { escrow: string; buyer: string; seller: string; asset: string }) {
  return db
    .selectFrom('deferred_vouchers')
    .distinctOn('voucher_id')
    .where('escrow', '=', t.escrow)
    .where('buyer', '=', t.buyer)
    .where('seller', '=', t.seller)
    .where('asset', '=', t.asset)
    .orderBy('voucher_id')
    .orderBy('nonce', 'desc')
}

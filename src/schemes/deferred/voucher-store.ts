/**
 * The `deferred` scheme's voucher store in Postgres (table `deferred_vouchers`): every voucher
 * accepted for a call, the head of each voucher id marked `latest`.
 *
 * Vouchers are written with their payment rows by the ledger's group commit
 * (src/ledger/ledger-writer.ts), after the hot path reserved them in Redis (voucher-heads.ts, which
 * applies `checkAggregation`); the unique (voucher id, nonce) index is the last word on a
 * duplicate nonce. Here: the latest head a buyer aggregates onto, and `giveBack` for a voucher
 * written before a call that then failed.
 */
import { sql, type Kysely, type Transaction } from 'kysely'
import type { Address, Hex } from 'viem'
import type { Database } from '../../db/database.js'
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

class NotStored extends Error {}

export function createVoucherStore(db: Kysely<Database>) {
  return {
    /** The most recent head of the tuple (the voucher a buyer aggregates onto next), if any. */
    async latest(t: VoucherTuple, chainId: bigint): Promise<StoredVoucher | undefined> {
      const r = await db
        .selectFrom('deferred_vouchers')
        .selectAll()
        .where('escrow', '=', t.escrow)
        .where('buyer', '=', t.buyer)
        .where('seller', '=', t.seller)
        .where('asset', '=', t.asset)
        .where('latest', '=', true)
        .orderBy('created_at', 'desc')
        .orderBy('id', 'desc')
        .limit(1)
        .executeTakeFirst()
      if (!r) return undefined
      return {
        voucher: {
          id: r.voucher_id as Hex,
          buyer: r.buyer as Address,
          seller: r.seller as Address,
          valueAggregate: BigInt(r.value_aggregate),
          asset: r.asset as Address,
          timestamp: BigInt(r.timestamp),
          nonce: BigInt(r.nonce),
          escrow: r.escrow as Address,
          chainId,
        },
        signature: r.signature as Hex,
        collected: BigInt(r.collected),
      }
    },

    /**
     * Stores a voucher without a payment (the facilitator's `POST /deferred/vouchers`), after the
     * hot path's verify and reserve: as the ledger statement does, the head it continues is marked
     * not latest and the voucher inserted as the head, carrying the id's `collected`. False (nothing
     * written) when its (id, nonce) or digest is stored already or a higher nonce of its id is.
     */
    async storeAlone(v: DeferredVoucher, signature: Hex, digest: Hex): Promise<boolean> {
      const t: VoucherTuple = { escrow: v.escrow, buyer: v.buyer, seller: v.seller, asset: v.asset }
      return db
        .transaction()
        .execute(async (trx) => {
          await lockTuple(trx, t)
          const r = await sql<{ id: string }>`
          with vdemote as (
            update deferred_vouchers d set latest = false
            where d.escrow = ${t.escrow} and d.buyer = ${t.buyer} and d.seller = ${t.seller} and d.asset = ${t.asset}
              and d.voucher_id = ${v.id} and d.latest and d.nonce < ${v.nonce.toString()}::numeric
            returning d.id
          )
          insert into deferred_vouchers (escrow, buyer, seller, asset, voucher_id, nonce, value_aggregate, timestamp,
                                         signature, digest, latest, collected)
          select ${t.escrow}, ${t.buyer}, ${t.seller}, ${t.asset}, ${v.id}, ${v.nonce.toString()}::numeric,
            ${v.valueAggregate.toString()}::numeric, ${v.timestamp.toString()}::int8, ${signature}, ${digest}, true,
            coalesce((select max(d.collected) from deferred_vouchers d where d.escrow = ${t.escrow} and d.buyer = ${t.buyer}
              and d.seller = ${t.seller} and d.asset = ${t.asset} and d.voucher_id = ${v.id}), 0)
          where (select count(*) from vdemote) >= 0
            and not exists (select 1 from deferred_vouchers d where d.escrow = ${t.escrow} and d.buyer = ${t.buyer}
              and d.seller = ${t.seller} and d.asset = ${t.asset} and d.voucher_id = ${v.id}
              and d.nonce >= ${v.nonce.toString()}::numeric)
          on conflict do nothing
          returning id`.execute(trx)
          if (r.rows.length === 0) {
            // roll the demotion back with the transaction
            throw new NotStored()
          }
          return true
        })
        .catch((err) => {
          if (err instanceof NotStored) return false
          throw err
        })
    },

    /**
     * Gives a voucher written with its payment back (a record-first call that failed): removed while
     * it is its id's head and no payment that is not voided holds its digest, and the head it
     * replaced restored. A buyer who already aggregated onto it keeps it (the newer voucher includes
     * its value, signed by the buyer). True when a row was removed.
     */
    async giveBack(a: {
      tuple: VoucherTuple
      voucherId: Hex
      digest: Hex
      previousNonce: bigint | undefined
    }): Promise<boolean> {
      const t = a.tuple
      return db.transaction().execute(async (trx) => {
        await lockTuple(trx, t)
        const gone = await trx
          .deleteFrom('deferred_vouchers')
          .where('escrow', '=', t.escrow)
          .where('buyer', '=', t.buyer)
          .where('seller', '=', t.seller)
          .where('asset', '=', t.asset)
          .where('voucher_id', '=', a.voucherId)
          .where('digest', '=', a.digest)
          .where('latest', '=', true)
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
        if (!gone) return false
        if (a.previousNonce !== undefined) {
          await trx
            .updateTable('deferred_vouchers')
            .set({ latest: true, collected: gone.collected })
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
    },
  }
}

export type VoucherStore = ReturnType<typeof createVoucherStore>

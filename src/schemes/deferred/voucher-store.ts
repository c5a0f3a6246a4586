/**
 * The `deferred` scheme's voucher store in Postgres (table `deferred_vouchers`): every voucher
 * accepted for a call, the head of each voucher id marked `latest`.
 *
 * `accept` is the scheme's replay guard: under a transaction-scoped advisory lock per (escrow,
 * buyer, seller, asset) it checks the voucher against the stored head of its id (nonce + 1, the
 * aggregate grown by exactly the price, a later timestamp; a new id carries exactly the price),
 * checks the escrow balance against every uncollected aggregate of the tuple, and moves the head
 * — one compare-and-set, so two calls sending the same voucher nonce cannot both pass. `giveBack`
 * undoes it for a call that was not served.
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

export interface AcceptInput {
  voucher: DeferredVoucher
  signature: Hex
  digest: Hex
  /** the endpoint's price: what this voucher adds */
  amount: bigint
  /** the buyer's escrow balance for the tuple, as read from the chain */
  balance: bigint
}

/** What `accept` took: enough to give it back. */
export interface AcceptedVoucher {
  tuple: VoucherTuple
  voucherId: Hex
  nonce: bigint
  /** the head it replaced; undefined for a new voucher id */
  previousNonce: bigint | undefined
}

export type AcceptResult = { ok: true; accepted: AcceptedVoucher } | { ok: false; reason: ReasonCode; message: string }

interface HeadRow {
  voucher_id: string
  nonce: string
  value_aggregate: string
  timestamp: string
  collected: string
}

const tupleOf = (v: DeferredVoucher): VoucherTuple => ({
  escrow: v.escrow,
  buyer: v.buyer,
  seller: v.seller,
  asset: v.asset,
})

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

export function createVoucherStore(db: Kysely<Database>) {
  const heads = (q: Kysely<Database> | Transaction<Database>, t: VoucherTuple) =>
    q
      .selectFrom('deferred_vouchers')
      .select(['voucher_id', 'nonce', 'value_aggregate', 'timestamp', 'collected'])
      .where('escrow', '=', t.escrow)
      .where('buyer', '=', t.buyer)
      .where('seller', '=', t.seller)
      .where('asset', '=', t.asset)
      .where('latest', '=', true)

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

    /** Checks the voucher against its head and the escrow balance, and makes it the head: atomic. */
    async accept(input: AcceptInput): Promise<AcceptResult> {
      const v = input.voucher
      const t = tupleOf(v)
      return db
        .transaction()
        .execute(async (trx): Promise<AcceptResult> => {
          await lockTuple(trx, t)
          const all = (await heads(trx, t).execute()) as HeadRow[]
          const head = all.find((h) => h.voucher_id === v.id)
          if (!head) {
            // an id with rows but no head cannot happen (giveBack restores the head); any stored row means used
            const used = await trx
              .selectFrom('deferred_vouchers')
              .select('id')
              .where('escrow', '=', t.escrow)
              .where('buyer', '=', t.buyer)
              .where('seller', '=', t.seller)
              .where('asset', '=', t.asset)
              .where('voucher_id', '=', v.id)
              .limit(1)
              .executeTakeFirst()
            if (used)
              return {
                ok: false as const,
                reason: 'invalid_deferred_evm_payload_voucher_stale' as const,
                message: `voucher ${v.id} was already used`,
              }
          }
          const prev = head && {
            nonce: BigInt(head.nonce),
            valueAggregate: BigInt(head.value_aggregate),
            timestamp: BigInt(head.timestamp),
          }
          const bad = checkAggregation(prev, v, input.amount)
          if (bad) return { ok: false as const, ...bad }
          // what the escrow must still pay: every other head's uncollected aggregate, and this one's
          const collected = head ? BigInt(head.collected) : 0n
          let owed = v.valueAggregate - collected
          for (const h of all) if (h !== head) owed += BigInt(h.value_aggregate) - BigInt(h.collected)
          if (owed > input.balance) {
            return {
              ok: false as const,
              reason: 'invalid_deferred_evm_insufficient_escrow_balance' as const,
              message: `the escrow holds ${input.balance} for this buyer, seller and asset; vouchers not yet collected would come to ${owed}`,
            }
          }
          if (head) {
            await trx
              .updateTable('deferred_vouchers')
              .set({ latest: false })
              .where('escrow', '=', t.escrow)
              .where('buyer', '=', t.buyer)
              .where('seller', '=', t.seller)
              .where('asset', '=', t.asset)
              .where('voucher_id', '=', v.id)
              .where('latest', '=', true)
              .execute()
          }
          const inserted = await trx
            .insertInto('deferred_vouchers')
            .values({
              ...t,
              voucher_id: v.id,
              nonce: v.nonce,
              value_aggregate: v.valueAggregate,
              timestamp: v.timestamp,
              signature: input.signature,
              digest: input.digest,
              latest: true,
              collected,
            })
            .onConflict((oc) => oc.doNothing())
            .returning('id')
            .executeTakeFirst()
          // a stored (voucher, nonce) or digest: the same voucher again
          if (!inserted) throw new VoucherConflict()
          return {
            ok: true as const,
            accepted: { tuple: t, voucherId: v.id, nonce: v.nonce, previousNonce: prev?.nonce },
          }
        })
        .catch((err: unknown) => {
          if (err instanceof VoucherConflict)
            return {
              ok: false as const,
              reason: 'invalid_deferred_evm_payload_voucher_stale' as const,
              message: `voucher ${v.id} nonce ${v.nonce} was already used`,
            }
          throw err
        })
    },

    /**
     * Gives an accepted voucher back (its call was not served): removed, and the head it replaced
     * restored — only while it is still the head. A buyer who already aggregated onto it keeps it
     * (the newer voucher includes its value, signed by the buyer).
     */
    async giveBack(a: AcceptedVoucher): Promise<boolean> {
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
          .where('nonce', '=', a.nonce.toString())
          .where('latest', '=', true)
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

/** thrown inside the accept transaction to roll it back when the insert found the voucher stored */
class VoucherConflict extends Error {}

export type VoucherStore = ReturnType<typeof createVoucherStore>

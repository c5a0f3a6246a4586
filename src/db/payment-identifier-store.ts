import { sql, type Kysely } from 'kysely'
import type { Database, PaymentStatus } from './database.js'

/** A `payment-identifier` already in use, with what its payment became. */
export interface UsedPaymentId {
  fingerprint: string
  paymentId: string
  /** a call for this id is still running (its lease is ahead) */
  leased: boolean
  /** past its retention: the id is free again */
  expired: boolean
  /** the payment's status; null while it is not written (a hosted call runs before its one write) */
  status: PaymentStatus | null
  transaction: string | null
  answer: { status: number; contentType: string | null; body: Buffer } | null
}

export interface StoredAnswer {
  status: number
  contentType: string | undefined
  body: Buffer
}

/**
 * The proxy's `payment_identifiers` table: a buyer's x402 `payment-identifier` keys, one per
 * (payer, id), claimed for one call at a time (a lease), then kept with the call's small hosted
 * answer until they expire. Times are the database's, so every proxy agrees on leases.
 */
export function createPaymentIdentifierStore(db: Kysely<Database>, opts: { retentionSeconds: number }) {
  const expiresAt = sql<Date>`now() + make_interval(secs => ${opts.retentionSeconds})`
  const leaseUntil = (leaseMs: number) => sql<Date>`now() + make_interval(secs => ${leaseMs / 1000})`

  return {
    /** Claims a new id for the payment `paymentId`, or answers how it is already used. */
    async claim(
      payer: string,
      id: string,
      fingerprint: string,
      paymentId: string,
      leaseMs: number,
    ): Promise<{ claimed: true } | { claimed: false; used: UsedPaymentId }> {
      const inserted = await db
        .insertInto('payment_identifiers')
        .values({
          payer,
          payment_identifier: id,
          fingerprint,
          payment_id: paymentId,
          claimed_until: leaseUntil(leaseMs),
          expires_at: expiresAt,
        })
        .onConflict((oc) => oc.columns(['payer', 'payment_identifier']).doNothing())
        .returning('payer')
        .executeTakeFirst()
      if (inserted) return { claimed: true }
      const r = await db
        .selectFrom('payment_identifiers as i')
        .leftJoin('payments as p', 'p.id', 'i.payment_id')
        .select([
          'i.fingerprint',
          'i.payment_id',
          'i.answer_status',
          'i.answer_content_type',
          'i.answer_body',
          'p.status',
          'p.tx_hash',
        ])
        .select([
          sql<boolean>`coalesce(i.claimed_until > now(), false)`.as('leased'),
          sql<boolean>`i.expires_at <= now()`.as('expired'),
        ])
        .where('i.payer', '=', payer)
        .where('i.payment_identifier', '=', id)
        .executeTakeFirst()
      // deleted between the two statements (expired and purged): claim again
      if (!r) return this.claim(payer, id, fingerprint, paymentId, leaseMs)
      return {
        claimed: false,
        used: {
          fingerprint: r.fingerprint,
          paymentId: r.payment_id,
          leased: r.leased,
          expired: r.expired,
          status: r.status,
          transaction: r.tx_hash,
          answer:
            r.answer_status !== null && r.answer_body !== null
              ? { status: r.answer_status, contentType: r.answer_content_type, body: r.answer_body }
              : null,
        },
      }
    },

    /**
     * Gives an id whose call ended without a charge (or whose retention passed) to a new payment;
     * false when another call took it first.
     */
    async takeOver(
      payer: string,
      id: string,
      from: string,
      fingerprint: string,
      paymentId: string,
      leaseMs: number,
    ): Promise<boolean> {
      const r = await db
        .updateTable('payment_identifiers')
        .set({
          fingerprint,
          payment_id: paymentId,
          claimed_until: leaseUntil(leaseMs),
          expires_at: expiresAt,
          answer_status: null,
          answer_content_type: null,
          answer_body: null,
        })
        .where('payer', '=', payer)
        .where('payment_identifier', '=', id)
        .where('payment_id', '=', from)
        .executeTakeFirst()
      return r.numUpdatedRows === 1n
    },

    /**
     * Ends the lease of `paymentId`'s call, keeping its answer when given. A call that ended without
     * its payment ever being recorded (refused at the reservation, not recorded) leaves no row: the
     * id is as unused as its payment, and unfunded calls leave nothing behind.
     */
    async release(payer: string, id: string, paymentId: string, answer?: StoredAnswer): Promise<void> {
      if (!answer) {
        const gone = await db
          .deleteFrom('payment_identifiers')
          .where('payer', '=', payer)
          .where('payment_identifier', '=', id)
          .where('payment_id', '=', paymentId)
          .where(({ not, exists, selectFrom }) =>
            not(exists(selectFrom('payments').select('payments.id').where('payments.id', '=', paymentId))),
          )
          .executeTakeFirst()
        if (gone.numDeletedRows === 1n) return
      }
      await db
        .updateTable('payment_identifiers')
        .set({
          claimed_until: null,
          answer_status: answer?.status ?? null,
          answer_content_type: answer?.contentType ?? null,
          answer_body: answer?.body ?? null,
        })
        .where('payer', '=', payer)
        .where('payment_identifier', '=', id)
        .where('payment_id', '=', paymentId)
        .execute()
    },

    /** Deletes ids past their retention (their stored answers with them); how many. */
    async purgeExpired(limit = 10_000): Promise<number> {
      const r =
        await sql`delete from payment_identifiers where ctid in (select ctid from payment_identifiers where expires_at <= now() and coalesce(claimed_until <= now(), true) limit ${limit})`.execute(
          db,
        )
      return Number(r.numAffectedRows ?? 0n)
    },
  }
}

export type PaymentIdentifierStore = ReturnType<typeof createPaymentIdentifierStore>

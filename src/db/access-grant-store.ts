import { sql, type Kysely } from 'kysely'
import type { Database } from './database.js'

/** The Redis key (under the deployment's prefix) counting calls served on a sign-in, for /metrics. */
export const SIGN_IN_SERVED_KEY = ['siwx', 'served'] as const

/**
 * x402 sign-in-with-x access grants: who paid for what, and until when. A served payment on an
 * endpoint with paid access grants (or extends) its payer's access to the endpoint, or to its
 * service; a sign-in is served only while the grant runs. Times are the database's, so every proxy agrees.
 */
export function createAccessGrantStore(db: Kysely<Database>) {
  return {
    /** Grants `payer` access to `scopeId` for `minutes` from now (a later expiry is kept). */
    async grant(payer: string, scopeId: string, paymentId: string, minutes: number): Promise<void> {
      const until = sql<Date>`now() + make_interval(mins => ${minutes})`
      await db
        .insertInto('access_grants')
        .values({ payer: payer.toLowerCase(), scope_id: scopeId, payment_id: paymentId, expires_at: until })
        .onConflict((oc) =>
          oc.columns(['payer', 'scope_id']).doUpdateSet({
            payment_id: paymentId,
            expires_at: sql<Date>`greatest(access_grants.expires_at, excluded.expires_at)`,
          }),
        )
        .execute()
    },

    /** The running grant of `payer` to `scopeId` (the payment that granted it), or undefined. */
    async holding(payer: string, scopeId: string): Promise<{ paymentId: string; expiresAt: Date } | undefined> {
      const r = await db
        .selectFrom('access_grants')
        .select(['payment_id', 'expires_at'])
        .where('payer', '=', payer.toLowerCase())
        .where('scope_id', '=', scopeId)
        .where('expires_at', '>', sql<Date>`now()`)
        .executeTakeFirst()
      return r && { paymentId: r.payment_id, expiresAt: r.expires_at }
    },

    /** Deletes grants that ran out; how many. */
    async purgeExpired(limit = 10_000): Promise<number> {
      const r =
        await sql`delete from access_grants where ctid in (select ctid from access_grants where expires_at <= now() limit ${limit})`.execute(
          db,
        )
      return Number(r.numAffectedRows ?? 0n)
    },
  }
}

export type AccessGrantStore = ReturnType<typeof createAccessGrantStore>

import { sql, type Kysely } from 'kysely'
import type { RedisClient } from '../redis-client.js'
import { preparedQuery } from './create-db.js'
import type { Database } from './database.js'
import { groupCommit } from './group-commit.js'

/** The Redis key (under the deployment's prefix) counting calls served on a sign-in, for /metrics. */
export const SIGN_IN_SERVED_KEY = ['siwx', 'served'] as const

/** The running grants, kept in Redis in front of Postgres (absent: every read goes to Postgres). */
interface GrantCache {
  redis: RedisClient
  key(...parts: string[]): string
}

interface NewGrant {
  payer: string
  scopeId: string
  paymentId: string
  minutes: number
}

// Many payments' grants in one statement (fixed, prepared once per connection); a later expiry is kept.
// A batch holds one row per (payer, scope) (ON CONFLICT DO UPDATE may not meet a row twice): the writer
// merges repeats first.
const GRANT_SQL = `
  insert into access_grants (payer, scope_id, payment_id, expires_at)
  select t.payer, t.scope_id, t.payment_id, now() + make_interval(mins => t.minutes)
  from unnest($1::text[], $2::uuid[], $3::uuid[], $4::int4[]) as t(payer, scope_id, payment_id, minutes)
  on conflict (payer, scope_id) do update set payment_id = excluded.payment_id,
    expires_at = greatest(access_grants.expires_at, excluded.expires_at)
  returning payer, scope_id::text, payment_id::text, (extract(epoch from expires_at - now()) * 1000)::int8 as ms_left`

/**
 * x402 sign-in-with-x access grants: who paid for what, and until when. A served payment on an
 * endpoint with paid access grants (or extends) its payer's access to the endpoint, or to its
 * service; a sign-in is served only while the grant runs. Times are the database's, so every proxy agrees.
 *
 * Postgres holds the grants; with a `cache`, a running grant is also kept in Redis until it ends
 * (written with each grant, rebuilt from Postgres on a miss), so a sign-in reads no database. A
 * grant only ever gets longer, so a cached one that is older than Postgres's is still true
 * (possibly naming the previous granting payment) until its own end.
 */
export function createAccessGrantStore(db: Kysely<Database>, cache?: GrantCache) {
  const cacheKey = (payer: string, scopeId: string) => cache!.key('siwx-grant', scopeId, payer)
  const keep = async (payer: string, scopeId: string, paymentId: string, msLeft: number) => {
    if (cache && msLeft > 0) await cache.redis.set(cacheKey(payer, scopeId), paymentId, 'PX', msLeft)
  }

  // group-committed: the grants of many calls per statement and commit
  const writer = groupCommit<NewGrant, true>({
    maxItems: 256,
    maxInFlight: 2,
    async flush(items) {
      const merged = new Map<string, NewGrant>()
      for (const g of items) {
        const k = `${g.payer} ${g.scopeId}`
        const was = merged.get(k)
        // the later payment names the grant; the longer access wins
        merged.set(k, was ? { ...g, minutes: Math.max(was.minutes, g.minutes) } : g)
      }
      const rows = [...merged.values()]
      const r = await preparedQuery<{ payer: string; scope_id: string; payment_id: string; ms_left: string }>(
        db,
        'tollgate_access_grant_v1',
        GRANT_SQL,
        [
          rows.map((g) => g.payer),
          rows.map((g) => g.scopeId),
          rows.map((g) => g.paymentId),
          rows.map((g) => g.minutes),
        ],
      )
      // a lost cache write leaves the previous (still true) grant or a miss that reads Postgres
      await Promise.all(r.rows.map((g) => keep(g.payer, g.scope_id, g.payment_id, Number(g.ms_left)).catch(() => {})))
      return items.map(() => true as const)
    },
  })

  async function fromDb(payer: string, scopeId: string) {
    const r = await db
      .selectFrom('access_grants')
      .select(['payment_id', 'expires_at'])
      .select(sql<string>`(extract(epoch from expires_at - now()) * 1000)::int8`.as('ms_left'))
      .where('payer', '=', payer)
      .where('scope_id', '=', scopeId)
      .where('expires_at', '>', sql<Date>`now()`)
      .executeTakeFirst()
    return r && { paymentId: r.payment_id, expiresAt: r.expires_at, msLeft: Number(r.ms_left) }
  }

  return {
    /** Grants `payer` access to `scopeId` for `minutes` from now (a later expiry is kept); resolves once committed. */
    async grant(payer: string, scopeId: string, paymentId: string, minutes: number): Promise<void> {
      await writer.add({ payer: payer.toLowerCase(), scopeId, paymentId, minutes })
    },

    /** Keeps a grant written elsewhere (with its payment's outcome, ledger-writer.ts) in the Redis copy. */
    cached: (payer: string, scopeId: string, paymentId: string, msLeft: number): Promise<void> =>
      keep(payer.toLowerCase(), scopeId, paymentId, msLeft),

    /** The payment whose running grant gives `payer` access to `scopeId`, or undefined. */
    async holding(payer: string, scopeId: string): Promise<{ paymentId: string } | undefined> {
      const p = payer.toLowerCase()
      if (cache) {
        const hit = await cache.redis.get(cacheKey(p, scopeId)).catch(() => null)
        if (hit) return { paymentId: hit }
      }
      const r = await fromDb(p, scopeId)
      if (r) await keep(p, scopeId, r.paymentId, r.msLeft).catch(() => {})
      return r && { paymentId: r.paymentId }
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

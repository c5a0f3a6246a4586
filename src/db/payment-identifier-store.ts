import { sql, type Kysely } from 'kysely'
import { preparedQuery } from './create-db.js'
import type { Database, PaymentStatus } from './database.js'
import { groupCommit } from './group-commit.js'

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

interface NewClaim {
  payer: string
  id: string
  fingerprint: string
  paymentId: string
  leaseMs: number
}

interface Release {
  payer: string
  id: string
  paymentId: string
  answer: StoredAnswer | undefined
}

// New ids, many calls' in one statement (fixed, prepared once per connection): an id already used
// is skipped (DO NOTHING also skips a second claim of one id in the same batch), and only the
// claims that went in come back.
//
// Committed without waiting for the WAL flush (`synchronous_commit` off for this statement's own
// transaction only): the claim is visible to every other call at once, which is what it is for,
// and it is durable before anything of its call is: the call's outcome is a synchronous commit
// later in the same WAL, which flushes the claim with it. Postgres lost before that flush loses the
// claim and the call's unflushed outcome together, and nothing was answered (the answer waits for
// the outcome); the outcome's write upserts the id's row anyway (ledger-writer.ts IdRelease). This
// saves the call a WAL flush: about 70 µs of Postgres CPU and 0.3 ms of wait on this machine.
const CLAIM_SQL = `
  with async_commit as (select set_config('synchronous_commit', 'off', true))
  insert into payment_identifiers (payer, payment_identifier, fingerprint, payment_id, claimed_until, expires_at)
  select t.payer, t.id, t.fingerprint, t.payment_id, now() + make_interval(secs => t.lease_s),
    now() + make_interval(secs => $6::float8)
  from unnest($1::text[], $2::text[], $3::text[], $4::uuid[], $5::float8[]) as t(payer, id, fingerprint, payment_id, lease_s),
    async_commit
  on conflict (payer, payment_identifier) do nothing
  returning payment_id`

// Ends many calls' leases in one statement: a call that kept no answer and whose payment was never
// written leaves no row (deleted); every other one ends its lease, with its answer when kept. The
// update leaves out the rows the delete took (one statement must not change a row twice).
const RELEASE_SQL = `
  with t as (
    select * from unnest($1::text[], $2::text[], $3::uuid[], $4::int2[], $5::text[], $6::bytea[])
      as t(payer, id, payment_id, status, content_type, body)
  ), gone as (
    delete from payment_identifiers i using t
    where i.payer = t.payer and i.payment_identifier = t.id and i.payment_id = t.payment_id and t.status is null
      and not exists (select 1 from payments p where p.id = t.payment_id)
    returning i.payment_id
  )
  update payment_identifiers i set claimed_until = null, answer_status = t.status,
    answer_content_type = t.content_type, answer_body = t.body
  from t
  where i.payer = t.payer and i.payment_identifier = t.id and i.payment_id = t.payment_id
    and t.payment_id not in (select payment_id from gone)`

/**
 * A new id's claim and every release, group-committed (many calls per statement and commit), so a
 * call with an id costs no round trip of its own on the common path.
 */
function idWriters(db: Kysely<Database>, retentionSeconds: number) {
  const claims = groupCommit<NewClaim, boolean>({
    maxItems: 256,
    maxInFlight: 1,
    async flush(items) {
      const r = await preparedQuery<{ payment_id: string }>(db, 'tollgate_payment_id_claim_v2', CLAIM_SQL, [
        items.map((c) => c.payer),
        items.map((c) => c.id),
        items.map((c) => c.fingerprint),
        items.map((c) => c.paymentId),
        items.map((c) => c.leaseMs / 1000),
        retentionSeconds,
      ])
      const won = new Set(r.rows.map((x) => x.payment_id))
      return items.map((c) => won.has(c.paymentId))
    },
  })
  const releases = groupCommit<Release, true>({
    maxItems: 256,
    maxInFlight: 2,
    async flush(items) {
      await preparedQuery(db, 'tollgate_payment_id_release_v1', RELEASE_SQL, [
        items.map((x) => x.payer),
        items.map((x) => x.id),
        items.map((x) => x.paymentId),
        items.map((x) => x.answer?.status ?? null),
        items.map((x) => x.answer?.contentType ?? null),
        items.map((x) => x.answer?.body ?? null),
      ])
      return items.map(() => true as const)
    },
  })

  return { claims, releases }
}

/** How a used id stands: its row with its payment's status, or undefined when it is gone. */
async function readUsed(db: Kysely<Database>, payer: string, id: string): Promise<UsedPaymentId | undefined> {
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
  if (!r) return undefined
  return {
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
  }
}

/**
 * The proxy's `payment_identifiers` table: a buyer's x402 `payment-identifier` keys, one per
 * (payer, id), claimed for one call at a time (a lease), then kept with the call's small hosted
 * answer until they expire. Times are the database's, so every proxy agrees on leases.
 */
export function createPaymentIdentifierStore(db: Kysely<Database>, opts: { retentionSeconds: number }) {
  const expiresAt = sql<Date>`now() + make_interval(secs => ${opts.retentionSeconds})`
  const leaseUntil = (leaseMs: number) => sql<Date>`now() + make_interval(secs => ${leaseMs / 1000})`
  const { claims, releases } = idWriters(db, opts.retentionSeconds)
  return {
    retentionSeconds: opts.retentionSeconds, // how long an id is kept after its claim

    /** Claims a new id for the payment `paymentId`, or answers how it is already used. */
    async claim(
      payer: string,
      id: string,
      fingerprint: string,
      paymentId: string,
      leaseMs: number,
    ): Promise<{ claimed: true } | { claimed: false; used: UsedPaymentId }> {
      if (await claims.add({ payer, id, fingerprint, paymentId, leaseMs })) return { claimed: true }
      const used = await readUsed(db, payer, id)
      // deleted between the two statements (expired and purged): claim again
      if (!used) return this.claim(payer, id, fingerprint, paymentId, leaseMs)
      return { claimed: false, used }
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
    release: (payer: string, id: string, paymentId: string, answer?: StoredAnswer): Promise<unknown> =>
      releases.add({ payer, id, paymentId, answer }),

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

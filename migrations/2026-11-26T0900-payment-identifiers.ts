import { sql, type Kysely } from 'kysely'

// x402 `payment-identifier` (safe retries): a buyer's idempotency key, scoped to the payer whose
// signature carried it. One row per (payer, id): the request it was first used for (fingerprint),
// the payment of the call made for it (no foreign key: a hosted call's payment is written after its
// handler answered), the lease of a call still running, and a small hosted answer kept until
// `expires_at` so a buyer who lost it gets it again without paying twice.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create table payment_identifiers (
      payer text not null,
      payment_identifier text not null check (length(payment_identifier) between 16 and 128),
      fingerprint text not null,
      payment_id uuid not null,
      claimed_until timestamptz,
      expires_at timestamptz not null,
      answer_status int2,
      answer_content_type text,
      answer_body bytea,
      created_at timestamptz not null default now(),
      primary key (payer, payment_identifier)
    )`.execute(db)
  await sql`create index payment_identifiers_expires_at on payment_identifiers (expires_at)`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop table payment_identifiers`.execute(db)
}

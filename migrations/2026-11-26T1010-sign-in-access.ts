import { sql, type Kysely } from 'kysely'

// x402 `sign-in-with-x` (pay once, come back): a seller marks an endpoint, or a whole service, as
// "paid access for N minutes" (`access_minutes`, null: off, the default). A buyer whose payment
// for it was served holds an access grant until `expires_at`, and may sign in with the same wallet
// instead of paying again. One grant per (payer, scope): the scope is the endpoint when the
// endpoint has its own setting, else its service. No foreign keys: a grant outlives nothing it
// names, and an unpublished endpoint simply stops offering sign-in.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table endpoints add column access_minutes int4 check (access_minutes between 1 and 525600)`.execute(
    db,
  )
  await sql`alter table services add column access_minutes int4 check (access_minutes between 1 and 525600)`.execute(db)
  await sql`
    create table access_grants (
      payer text not null,
      scope_id uuid not null,
      payment_id uuid not null,
      expires_at timestamptz not null,
      created_at timestamptz not null default now(),
      primary key (payer, scope_id)
    )`.execute(db)
  await sql`create index access_grants_expires_at on access_grants (expires_at)`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop table access_grants`.execute(db)
  await sql`alter table services drop column access_minutes`.execute(db)
  await sql`alter table endpoints drop column access_minutes`.execute(db)
}

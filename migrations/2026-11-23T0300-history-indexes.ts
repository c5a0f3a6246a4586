import { sql, type Kysely } from 'kysely'

// GET /v1/transactions and /v1/payment-events (src/services/accounts/history-export.ts) read one
// user's payments in (created_at, id) order. With only payments_created_idx, Postgres walked
// everyone's payments in that order and filtered them, so a user with few payments paid for all.
// Two indexes that start with the user filter let each of the user's agents and endpoints be read
// in order on its own, in proportion to the user's own rows:
// - payments_payer_lower_created_idx: the buyer side, payments by one of the user's agents. On
//   lower(payer) because the API matches payers case-insensitively (agents are stored
//   checksummed; the proxy writes payers in lower case, rows written any other way may not be);
// - payments_endpoint_created_idx: the seller side, payments to one of the user's endpoints. It
//   also serves the ON DELETE SET NULL of payments_endpoint_fk, which scanned the whole table.
// payments_created_idx goes: the history was its only reader, and it let the planner walk
// everyone's payments for an endpoint it guessed to be average-sized. Payments are inserted on the
// paid hot path, so every index costs each payment a write: net, one more than before. Nothing is
// added to payment_events: its pages reach a user's events through these indexes and
// payment_events_payment_idx (payment_id, id), or walk payment_events_created_idx for a user who
// holds a large share of all payments.
//
// `if (not) exists`: on a large live table, create the two indexes beforehand with CREATE INDEX
// CONCURRENTLY under these names (a plain CREATE INDEX, as here inside the migration's
// transaction, blocks inserts while it builds); this migration then only drops the old one.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`create index if not exists payments_payer_lower_created_idx on payments (lower(payer), created_at, id)`.execute(
    db,
  )
  await sql`create index if not exists payments_endpoint_created_idx on payments (endpoint_id, created_at, id)`.execute(
    db,
  )
  await sql`drop index if exists payments_created_idx`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`create index if not exists payments_created_idx on payments (created_at, id)`.execute(db)
  await sql`drop index if exists payments_endpoint_created_idx`.execute(db)
  await sql`drop index if exists payments_payer_lower_created_idx`.execute(db)
}

import { sql, type Kysely } from 'kysely'

// Issue #33: an agent's `deferred` payment stays counted against its caps until the platform's own
// later voucher for the same (buyer, seller, voucher id) supersedes it without it. Which one does
// is read from the voucher's id and aggregate, kept beside the row. Null for the other schemes.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table agent_payments add column voucher_id text, add column value_aggregate numeric(78,0)`.execute(db)
  await sql`create index agent_payments_open_vouchers on agent_payments (payer, pay_to, voucher_id) where scheme = 'deferred' and status = 'reserved'`.execute(
    db,
  )
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop index if exists agent_payments_open_vouchers`.execute(db)
  await sql`alter table agent_payments drop column voucher_id, drop column value_aggregate`.execute(db)
}

import { sql, type Kysely } from 'kysely'

// Agent wallets pay `upto` (issue #27): the Permit2 authorization is for the endpoint's maximum,
// which the caps reserve; `amount` is lowered to the actual charge once the platform's own proxy
// recorded it, and `max_amount` keeps the maximum (what the wallet's unsettled total counts until
// settlement). Null for the other schemes.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table agent_payments add column max_amount numeric(78,0) check (max_amount is null or max_amount >= amount)`.execute(
    db,
  )
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table agent_payments drop column max_amount`.execute(db)
}

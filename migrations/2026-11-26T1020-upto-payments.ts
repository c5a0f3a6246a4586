import { sql, type Kysely } from 'kysely'

// The `upto` scheme (issue #27): a payment authorizes at most `max_value` (the endpoint's maximum
// price, a Permit2 signature for the x402 upto proxy) and `value` is what the call actually cost,
// known once it answered. `facilitator` is the witness's facilitator: the relayer that must send
// its settlement. Both are null for the other schemes.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table payments add column max_value numeric(78,0) check (max_value is null or max_value >= value)`.execute(
    db,
  )
  await sql`alter table payments add column facilitator text`.execute(db)
  await sql`alter table agent_payments drop constraint if exists agent_payments_scheme_check`.execute(db)
  await sql`alter table agent_payments add constraint agent_payments_scheme_check check (scheme in ('exact', 'deferred', 'upto'))`.execute(
    db,
  )
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table payments drop column max_value, drop column facilitator`.execute(db)
}

import { sql, type Kysely } from 'kysely'

// Issue #34: a held batch-settlement payment shows its owner what it would deposit into the agent's
// channel beside the price (atomic USDC; null: no deposit, or another scheme). Shown, not matched:
// the deposit at signing time follows the channel's balance then, within the owner's bound.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table approvals add column deposit numeric(78,0) check (deposit is null or deposit > 0)`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table approvals drop column if exists deposit`.execute(db)
}

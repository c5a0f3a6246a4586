import { sql, type Kysely } from 'kysely'

// Human approval (issue 38): an agent's policy may hold a payment for its owner's decision, above
// an amount (`approval_above`, atomic USDC) or past N calls a minute to a seller it first paid less
// than a day ago (`approval_new_seller_per_minute`). Each held payment is an `approvals` row: the
// terms it was asked for, the decision and where it came from (the audit), and, once used, the
// signed answer (encrypted with the master key) so a retry with the same approval id never signs twice.

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('agents')
    .addColumn('approval_above', 'numeric(78, 0)', (c) => c.check(sql`approval_above >= 0`))
    .addColumn('approval_new_seller_per_minute', 'integer', (c) => c.check(sql`approval_new_seller_per_minute >= 0`))
    .execute()
  // the agent key cache reloads an agent when its policy changes, as for its caps
  await sql`drop trigger if exists agents_auth_notify on agents`.execute(db)
  await sql`create trigger agents_auth_notify after delete or update of address, encrypted_key, cap_per_transaction, cap_daily, cap_monthly, approval_above, approval_new_seller_per_minute on agents for each row execute function tollgate_agent_auth_notify()`.execute(
    db,
  )
  await db.schema
    .createTable('approvals')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('agent_id', 'uuid', (c) => c.notNull().references('agents.id').onDelete('cascade'))
    .addColumn('user_id', 'uuid', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('method', 'text', (c) => c.notNull())
    .addColumn('pay_to', 'text', (c) => c.notNull())
    .addColumn('amount', 'numeric(78, 0)', (c) => c.notNull())
    .addColumn('scheme', 'text', (c) => c.notNull())
    .addColumn('network', 'text', (c) => c.notNull())
    .addColumn('reason', 'text', (c) => c.notNull().check(sql`reason in ('amount', 'new_seller_rate')`))
    .addColumn('status', 'text', (c) =>
      c
        .notNull()
        .defaultTo('pending')
        .check(sql`status in ('pending', 'approved', 'denied', 'expired', 'used')`),
    )
    .addColumn('decided_by', 'uuid')
    .addColumn('decided_via', 'text', (c) => c.check(sql`decided_via in ('api_key', 'session', 'link')`))
    .addColumn('decided_at', 'timestamptz')
    .addColumn('decided_ip', 'text')
    .addColumn('decided_user_agent', 'text')
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now() + interval '10 minutes'`))
    .addColumn('used_at', 'timestamptz')
    .addColumn('agent_payment_id', 'uuid')
    .addColumn('signed_payment', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute()
  await sql`create index approvals_user_created on approvals (user_id, created_at desc)`.execute(db)
  await sql`create index approvals_agent_open on approvals (agent_id, pay_to) where status in ('pending', 'approved')`.execute(
    db,
  )
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('approvals').execute()
  await sql`drop trigger if exists agents_auth_notify on agents`.execute(db)
  await sql`create trigger agents_auth_notify after delete or update of address, encrypted_key, cap_per_transaction, cap_daily, cap_monthly on agents for each row execute function tollgate_agent_auth_notify()`.execute(
    db,
  )
  await db.schema
    .alterTable('agents')
    .dropColumn('approval_above')
    .dropColumn('approval_new_seller_per_minute')
    .execute()
}

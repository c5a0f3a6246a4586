import { sql, type Kysely } from 'kysely'

// Buyer-side payments: one row per authorization the platform signed for an agent. The row is
// the reservation that spend caps count (reserved + accepted); day_window / month_window are the
// UTC windows it counts in, fixed at signing time so a cap reset never re-counts it.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('agent_payments')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('agent_id', 'uuid', (c) => c.notNull().references('agents.id').onDelete('cascade'))
    .addColumn('status', 'text', (c) => c.notNull().check(sql`status in ('reserved','accepted','rejected','expired')`))
    .addColumn('x402_version', 'integer', (c) => c.notNull())
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('method', 'text', (c) => c.notNull())
    .addColumn('network', 'text', (c) => c.notNull())
    .addColumn('asset', 'text', (c) => c.notNull())
    .addColumn('payer', 'text', (c) => c.notNull())
    .addColumn('pay_to', 'text', (c) => c.notNull())
    .addColumn('amount', sql`numeric(78,0)`, (c) => c.notNull())
    .addColumn('nonce', 'text', (c) => c.notNull())
    .addColumn('valid_after', 'bigint', (c) => c.notNull())
    .addColumn('valid_before', 'bigint', (c) => c.notNull())
    .addColumn('day_window', 'text', (c) => c.notNull())
    .addColumn('month_window', 'text', (c) => c.notNull())
    .addColumn('tx_hash', 'text')
    .addColumn('payment_response', 'jsonb')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addUniqueConstraint('agent_payments_payer_nonce_key', ['payer', 'nonce'])
    .execute()
  await db.schema
    .createIndex('agent_payments_agent_day_idx')
    .on('agent_payments')
    .columns(['agent_id', 'day_window'])
    .execute()
  await db.schema
    .createIndex('agent_payments_agent_month_idx')
    .on('agent_payments')
    .columns(['agent_id', 'month_window'])
    .execute()
  // the expiry sweep: reserved/rejected rows whose authorization can no longer be used
  await db.schema
    .createIndex('agent_payments_open_idx')
    .on('agent_payments')
    .columns(['valid_before'])
    .where(sql.ref('status'), 'in', ['reserved', 'rejected'])
    .execute()
  await db.schema
    .createTable('agent_payment_events')
    .addColumn('id', 'bigserial', (c) => c.primaryKey())
    .addColumn('agent_payment_id', 'uuid', (c) => c.notNull().references('agent_payments.id').onDelete('cascade'))
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('data', 'jsonb')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute()
  await db.schema
    .createIndex('agent_payment_events_payment_idx')
    .on('agent_payment_events')
    .column('agent_payment_id')
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('agent_payment_events').execute()
  await db.schema.dropTable('agent_payments').execute()
}

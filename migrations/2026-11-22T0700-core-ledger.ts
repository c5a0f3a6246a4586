import { sql, type Kysely } from 'kysely'

// The core ledger: one row per accepted payment, and an append-only log of what happened to it.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('payments')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('endpoint_id', 'uuid')
    .addColumn('resource', 'text', (c) => c.notNull())
    .addColumn('method', 'text', (c) => c.notNull())
    .addColumn('x402_version', 'smallint', (c) => c.notNull())
    .addColumn('scheme', 'text', (c) => c.notNull().defaultTo('exact'))
    .addColumn('network', 'text', (c) => c.notNull())
    .addColumn('asset', 'text', (c) => c.notNull())
    .addColumn('payer', 'text', (c) => c.notNull())
    .addColumn('pay_to', 'text', (c) => c.notNull())
    // atomic units of the asset; numeric(78,0) holds any uint256
    .addColumn('value', sql`numeric(78,0)`, (c) => c.notNull().check(sql`value >= 0`))
    .addColumn('valid_after', 'bigint', (c) => c.notNull())
    .addColumn('valid_before', 'bigint', (c) => c.notNull())
    .addColumn('nonce', 'text', (c) => c.notNull())
    .addColumn('signature', 'text', (c) => c.notNull())
    .addColumn('settlement_mode', 'text', (c) =>
      c
        .notNull()
        .defaultTo('async')
        .check(sql`settlement_mode in ('async','sync')`),
    )
    .addColumn('status', 'text', (c) =>
      c.notNull().check(sql`status in ('verified','served','settling','settled','voided','failed')`),
    )
    .addColumn('tx_hash', 'text')
    .addColumn('failure_reason', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('settled_at', 'timestamptz')
    .addUniqueConstraint('payments_payer_nonce_unique', ['payer', 'nonce'])
    .execute()
  await db.schema.createIndex('payments_status_idx').on('payments').columns(['status', 'updated_at']).execute()
  await db.schema.createIndex('payments_payer_status_idx').on('payments').columns(['payer', 'status']).execute()
  await db.schema.createIndex('payments_created_idx').on('payments').columns(['created_at', 'id']).execute()

  await db.schema
    .createTable('payment_events')
    .addColumn('id', 'bigserial', (c) => c.primaryKey())
    .addColumn('payment_id', 'uuid', (c) => c.notNull().references('payments.id'))
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('from_status', 'text')
    .addColumn('to_status', 'text')
    .addColumn('reason', 'text')
    .addColumn('data', 'jsonb')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute()
  await db.schema.createIndex('payment_events_payment_idx').on('payment_events').columns(['payment_id', 'id']).execute()
  await db.schema.createIndex('payment_events_created_idx').on('payment_events').columns(['created_at', 'id']).execute()

  // Append-only: the log is evidence, so the database itself refuses edits.
  await sql`
    create or replace function payment_events_append_only() returns trigger language plpgsql as $$
    begin
      raise exception 'payment_events is append-only';
    end $$`.execute(db)
  await sql`
    create trigger payment_events_no_update before update or delete on payment_events
    for each row execute function payment_events_append_only()`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('payment_events').execute()
  await sql`drop function if exists payment_events_append_only()`.execute(db)
  await db.schema.dropTable('payments').execute()
}

import { sql, type Kysely } from 'kysely'

// Settlement batches: one row per relayer transaction, written (with its signed raw tx) BEFORE it is
// broadcast, so a worker that dies at any point leaves enough to resolve the batch from the chain.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('settlement_batches')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('network', 'text', (c) => c.notNull())
    .addColumn('asset', 'text', (c) => c.notNull())
    .addColumn('relayer', 'text', (c) => c.notNull())
    .addColumn('nonce', 'bigint', (c) => c.notNull())
    .addColumn('tx_hash', 'text', (c) => c.notNull())
    .addColumn('raw_tx', 'text', (c) => c.notNull())
    .addColumn('from_block', 'bigint', (c) => c.notNull())
    .addColumn('size', 'integer', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull().check(sql`status in ('pending','confirmed','reverted','dropped')`))
    .addColumn('gas_used', sql`numeric(78,0)`)
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute()
  await db.schema
    .createIndex('settlement_batches_pending_idx')
    .on('settlement_batches')
    .columns(['relayer', 'status'])
    .execute()
  await db.schema
    .createTable('settlement_batch_items')
    .addColumn('batch_id', 'uuid', (c) => c.notNull().references('settlement_batches.id'))
    .addColumn('payment_id', 'uuid', (c) => c.notNull().references('payments.id'))
    .addPrimaryKeyConstraint('settlement_batch_items_pk', ['batch_id', 'payment_id'])
    .execute()
  await db.schema
    .createIndex('settlement_batch_items_payment_idx')
    .on('settlement_batch_items')
    .column('payment_id')
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('settlement_batch_items').execute()
  await db.schema.dropTable('settlement_batches').execute()
}

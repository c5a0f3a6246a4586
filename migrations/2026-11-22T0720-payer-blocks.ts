import { sql, type Kysely } from 'kysely'

// Payers refused optimistic credit after a failed settlement. Durable here; mirrored in Redis for the hot path.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('payer_blocks')
    .addColumn('payer', 'text', (c) => c.primaryKey())
    .addColumn('reason', 'text', (c) => c.notNull())
    .addColumn('payment_id', 'uuid')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('payer_blocks').execute()
}

import type { Kysely } from 'kysely'

// /metrics reads confirmed batches incrementally by (status, updated_at): an index range per
// scrape instead of a scan of the whole table.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createIndex('settlement_batches_status_updated_idx')
    .on('settlement_batches')
    .columns(['status', 'updated_at'])
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('settlement_batches_status_updated_idx').execute()
}

import { sql, type Kysely } from 'kysely'

// The voucher store keeps no `latest` flag any more: the head of a voucher id is its highest
// nonce, found through the unique (escrow, buyer, seller, asset, voucher_id, nonce) index. Storing a
// voucher is then one insert: no update of the previous head (an update of an indexed column, so
// never HOT: a new row version and index entries on every call). The tuple's most recent voucher
// (the one a buyer aggregates onto next) is its highest `id`, from the new tuple index.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`create index if not exists deferred_vouchers_tuple_recent_idx
    on deferred_vouchers (escrow, buyer, seller, asset, id)`.execute(db)
  await sql`drop index if exists deferred_vouchers_latest_idx`.execute(db)
  await sql`drop index if exists deferred_vouchers_seller_idx`.execute(db)
  await db.schema.alterTable('deferred_vouchers').dropColumn('latest').execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('deferred_vouchers')
    .addColumn('latest', 'boolean', (c) => c.notNull().defaultTo(false))
    .execute()
  await sql`update deferred_vouchers d set latest = true where not exists (select 1 from deferred_vouchers h
    where h.escrow = d.escrow and h.buyer = d.buyer and h.seller = d.seller and h.asset = d.asset
      and h.voucher_id = d.voucher_id and h.nonce > d.nonce)`.execute(db)
  await sql`create unique index deferred_vouchers_latest_idx on deferred_vouchers (escrow, buyer, seller, asset, voucher_id) where latest`.execute(
    db,
  )
  await sql`create index deferred_vouchers_seller_idx on deferred_vouchers (escrow, seller, asset) where latest`.execute(
    db,
  )
  await sql`drop index if exists deferred_vouchers_tuple_recent_idx`.execute(db)
}

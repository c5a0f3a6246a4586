import { sql, type Kysely } from 'kysely'

// The voucher store of the `deferred` scheme: every voucher a buyer signed for a call this platform
// accepted, one row per (escrow, buyer, seller, asset, voucher id, nonce). `latest` marks the head of
// each voucher id (at most one, by the partial unique index): the one the next voucher aggregates
// onto and the one collection sends to the escrow. `digest` (the voucher's EIP-712 hash) is the
// payment's `payments.nonce`, which links a ledger row to its voucher. `collected` is what the
// escrow paid out for the voucher id, as last read from the chain.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('deferred_vouchers')
    .addColumn('id', 'bigserial', (c) => c.primaryKey())
    .addColumn('escrow', 'text', (c) => c.notNull())
    .addColumn('buyer', 'text', (c) => c.notNull())
    .addColumn('seller', 'text', (c) => c.notNull())
    .addColumn('asset', 'text', (c) => c.notNull())
    .addColumn('voucher_id', 'text', (c) => c.notNull())
    .addColumn('nonce', sql`numeric(78,0)`, (c) => c.notNull().check(sql`nonce >= 0`))
    .addColumn('value_aggregate', sql`numeric(78,0)`, (c) => c.notNull().check(sql`value_aggregate >= 0`))
    .addColumn('timestamp', 'bigint', (c) => c.notNull())
    .addColumn('signature', 'text', (c) => c.notNull())
    .addColumn('digest', 'text', (c) => c.notNull())
    .addColumn('latest', 'boolean', (c) => c.notNull().defaultTo(true))
    .addColumn('collected', sql`numeric(78,0)`, (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addUniqueConstraint('deferred_vouchers_voucher_nonce_unique', [
      'escrow',
      'buyer',
      'seller',
      'asset',
      'voucher_id',
      'nonce',
    ])
    .addUniqueConstraint('deferred_vouchers_digest_unique', ['buyer', 'digest'])
    .execute()
  await sql`create unique index deferred_vouchers_latest_idx on deferred_vouchers (escrow, buyer, seller, asset, voucher_id) where latest`.execute(
    db,
  )
  await sql`create index deferred_vouchers_seller_idx on deferred_vouchers (escrow, seller, asset) where latest`.execute(
    db,
  )
  // collection finds open deferred payments by scheme and status
  await sql`create index payments_scheme_status_idx on payments (scheme, status) where scheme <> 'exact'`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop index if exists payments_scheme_status_idx`.execute(db)
  await db.schema.dropTable('deferred_vouchers').execute()
}

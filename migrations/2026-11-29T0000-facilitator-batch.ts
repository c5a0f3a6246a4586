import { sql, type Kysely } from 'kysely'

// Facilitator mode gains `batch-settlement` (issue 34 item 9). Each transaction Tollgate sends for a
// seller's own server (a deposit, a claim, a settle, a refund) is a `facilitator_settlements` row as
// an exact transfer is, its `action` saying which (null: an exact transfer); the row's unique key
// (network, asset, payer, nonce) holds a key per action (the deposit's ERC-3009 nonce, the hash of
// the claim batch, the receiver's claimed total, the channel's refund nonce), so a repeat gets the
// first answer and two at once send one transaction.
// A channel whose deposit a seller's key settled is that seller's (`facilitator_batch_channels`):
// the platform's receiverAuthorizer signs claims and refunds for its owner only.

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('facilitator_settlements')
    .addColumn('action', 'text', (c) => c.check(sql`action in ('deposit', 'claim', 'settle', 'refund')`))
    .execute()
  await db.schema
    .createTable('facilitator_batch_channels')
    .addColumn('channel_id', 'text', (c) => c.primaryKey())
    .addColumn('network', 'text', (c) => c.notNull())
    .addColumn('user_id', 'uuid', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('receiver', 'text', (c) => c.notNull())
    .addColumn('token', 'text', (c) => c.notNull())
    .addColumn('receiver_authorizer', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute()
  await sql`create index facilitator_batch_channels_user_receiver on facilitator_batch_channels (user_id, receiver, token)`.execute(
    db,
  )
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('facilitator_batch_channels').execute()
  await db.schema.alterTable('facilitator_settlements').dropColumn('action').execute()
}

import { sql, type Kysely } from 'kysely'

// Facilitator mode (issue 34 item 9): sellers who use Tollgate only as their x402 facilitator send
// /facilitator/settle with their API key. Each authorization settled that way is one row: the user
// whose key asked (the relayer gas is accounted to them), the authorization (unique: the row is the
// lock that keeps a second settle of it from sending a second transfer), the transaction, its gas,
// and the SettleResponse answered, so a repeat of the same payload gets the first answer.

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('facilitator_settlements')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('user_id', 'uuid', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('scheme', 'text', (c) => c.notNull())
    .addColumn('network', 'text', (c) => c.notNull())
    .addColumn('asset', 'text', (c) => c.notNull())
    .addColumn('payer', 'text', (c) => c.notNull())
    .addColumn('pay_to', 'text', (c) => c.notNull())
    .addColumn('value', 'numeric(78, 0)', (c) => c.notNull())
    .addColumn('nonce', 'text', (c) => c.notNull())
    .addColumn('signature', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) =>
      c
        .notNull()
        .defaultTo('pending')
        .check(sql`status in ('pending', 'settled', 'failed')`),
    )
    .addColumn('tx_hash', 'text')
    .addColumn('gas_used', 'numeric(78, 0)')
    .addColumn('effective_gas_price', 'numeric(78, 0)')
    .addColumn('response', 'jsonb')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute()
  await sql`create unique index facilitator_settlements_authorization on facilitator_settlements (network, asset, payer, nonce)`.execute(
    db,
  )
  await sql`create index facilitator_settlements_user_created on facilitator_settlements (user_id, created_at desc)`.execute(
    db,
  )
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('facilitator_settlements').execute()
}

import { sql, type Kysely } from 'kysely'

// Money out: a withdrawal sends USDC from an agent wallet or the funding wallet (or the funding
// wallet's leftover ETH) to an address the owner names. One row per request, unique per
// (user_id, idempotency_key), so a retried request finds the first one. USDC leaves through an
// EIP-3009 authorization the wallet signs once (stored here before any relayer sees it, so every
// retry relays the same single-use authorization); ETH through a transaction the funding wallet
// signs, stored (raw_tx, tx_hash) before it is broadcast. withdrawal_events is the append-only log
// beside payment_events; its ids come from payment_events' sequence, so the two logs merge into one
// (created_at, id) order in GET /v1/payment-events.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('withdrawals')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('user_id', 'uuid', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('agent_id', 'uuid', (c) => c.references('agents.id').onDelete('cascade'))
    .addColumn('source', 'text', (c) => c.notNull().check(sql`source in ('agent','funding_wallet')`))
    .addColumn('from_address', 'text', (c) => c.notNull())
    .addColumn('to_address', 'text', (c) => c.notNull())
    .addColumn('asset', 'text', (c) => c.notNull().check(sql`asset in ('USDC','ETH')`))
    .addColumn('amount', sql`numeric(78,0)`, (c) => c.notNull().check(sql`amount > 0`))
    .addColumn('status', 'text', (c) =>
      c
        .notNull()
        .defaultTo('pending')
        .check(sql`status in ('pending','confirmed','failed')`),
    )
    .addColumn('idempotency_key', 'text', (c) => c.notNull())
    .addColumn('request_hash', 'text', (c) => c.notNull())
    // USDC: the signed authorization (public data: it only moves `amount` to `to_address`)
    .addColumn('auth_nonce', 'text')
    .addColumn('valid_after', 'bigint')
    .addColumn('valid_before', 'bigint')
    .addColumn('signature', 'text')
    // ETH: the funding wallet's own signed transaction
    .addColumn('tx_nonce', 'bigint')
    .addColumn('raw_tx', 'text')
    .addColumn('relayer', 'text')
    .addColumn('tx_hash', 'text')
    .addColumn('confirmed_block', 'bigint')
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('next_attempt_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('locked_until', 'timestamptz')
    .addColumn('error', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('confirmed_at', 'timestamptz')
    .addUniqueConstraint('withdrawals_user_idempotency_key', ['user_id', 'idempotency_key'])
    .execute()
  await db.schema
    .createIndex('withdrawals_due_idx')
    .on('withdrawals')
    .column('next_attempt_at')
    .where(sql.ref('status'), '=', 'pending')
    .execute()
  // the history's two ways in: all of a user's withdrawals, or one wallet's (the `agent` filter)
  await db.schema
    .createIndex('withdrawals_user_created_idx')
    .on('withdrawals')
    .columns(['user_id', 'created_at', 'id'])
    .execute()
  await sql`create index withdrawals_from_created_idx on withdrawals (lower(from_address), created_at, id)`.execute(db)

  await db.schema
    .createTable('withdrawal_events')
    .addColumn('id', 'bigint', (c) => c.primaryKey().defaultTo(sql`nextval('payment_events_id_seq')`))
    .addColumn('withdrawal_id', 'uuid', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('from_status', 'text')
    .addColumn('to_status', 'text')
    .addColumn('reason', 'text')
    .addColumn('data', 'jsonb')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute()
  await db.schema
    .createIndex('withdrawal_events_withdrawal_idx')
    .on('withdrawal_events')
    .columns(['withdrawal_id', 'id'])
    .execute()
  await db.schema
    .createIndex('withdrawal_events_created_idx')
    .on('withdrawal_events')
    .columns(['created_at', 'id'])
    .execute()
  await sql`
    create or replace function withdrawal_events_append_only() returns trigger language plpgsql as $$
    begin
      raise exception 'withdrawal_events is append-only';
    end $$`.execute(db)
  await sql`
    create trigger withdrawal_events_no_update before update or delete on withdrawal_events
    for each row execute function withdrawal_events_append_only()`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('withdrawal_events').execute()
  await sql`drop function if exists withdrawal_events_append_only()`.execute(db)
  await db.schema.dropTable('withdrawals').execute()
}

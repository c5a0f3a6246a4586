import { sql, type Kysely } from 'kysely'

// Agent top-ups. A "need" is (agent_id, need_seq): the worker that sees an agent below its
// threshold inserts need_seq = previous + 1, so two racing workers collide on the unique key and
// exactly one row exists per need. The partial unique index makes "at most one open top-up per
// agent" a database fact too. The EIP-3009 authorization is stored once signed, so every retry
// re-submits the same single-use authorization and can never move the money twice.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('topups')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('agent_id', 'uuid', (c) => c.notNull().references('agents.id').onDelete('cascade'))
    .addColumn('need_seq', 'integer', (c) => c.notNull())
    .addColumn('status', 'text', (c) =>
      c
        .notNull()
        .defaultTo('pending')
        .check(sql`status in ('pending','submitted','confirmed','failed')`),
    )
    .addColumn('agent_address', 'text', (c) => c.notNull())
    .addColumn('funding_address', 'text')
    .addColumn('amount', sql`numeric(78,0)`, (c) => c.notNull())
    .addColumn('threshold', sql`numeric(78,0)`, (c) => c.notNull())
    // the balance and block that created the need
    .addColumn('balance_seen', sql`numeric(78,0)`, (c) => c.notNull())
    .addColumn('block_seen', 'bigint', (c) => c.notNull())
    // the signed authorization (public data: it only moves `amount` to the agent)
    .addColumn('auth_nonce', 'text')
    .addColumn('valid_after', 'bigint')
    .addColumn('valid_before', 'bigint')
    .addColumn('signature', 'text')
    .addColumn('relayer', 'text')
    .addColumn('tx_hash', 'text')
    .addColumn('confirmed_block', 'bigint')
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('next_attempt_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('locked_until', 'timestamptz')
    .addColumn('error', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addUniqueConstraint('topups_agent_need_key', ['agent_id', 'need_seq'])
    .execute()
  await db.schema
    .createIndex('topups_one_open_per_agent')
    .unique()
    .on('topups')
    .column('agent_id')
    .where(sql.ref('status'), 'in', ['pending', 'submitted'])
    .execute()
  await db.schema
    .createIndex('topups_due_idx')
    .on('topups')
    .column('next_attempt_at')
    .where(sql.ref('status'), 'in', ['pending', 'submitted'])
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('topups').execute()
}

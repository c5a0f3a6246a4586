import { sql, type Kysely } from 'kysely'

// Users, dashboard sessions, API keys, agents with custodial wallets, agent keys, allowlists,
// funding wallets. Secrets are never stored: keys and session tokens as SHA-256 hashes, wallet
// private keys as AES-256-GCM ciphertext under the master key.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('users')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('email', 'text', (c) => c.notNull())
    // scrypt$N$r$p$salt$hash (base64url)
    .addColumn('password_hash', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute()
  await sql`create unique index users_email_unique on users (lower(email))`.execute(db)

  await db.schema
    .createTable('user_sessions')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('user_id', 'uuid', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .addColumn('revoked_at', 'timestamptz')
    .execute()

  await db.schema
    .createTable('api_keys')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('user_id', 'uuid', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('deployment', 'text', (c) => c.notNull().check(sql`deployment in ('production','sandbox')`))
    // e.g. "sk_test_4f" and "x9Qz": enough to recognise a key in a list, useless to an attacker
    .addColumn('prefix', 'text', (c) => c.notNull())
    .addColumn('last4', 'text', (c) => c.notNull())
    .addColumn('secret_hash', 'text', (c) => c.notNull().unique())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('last_used_at', 'timestamptz')
    .addColumn('revoked_at', 'timestamptz')
    .execute()
  await db.schema.createIndex('api_keys_user_idx').on('api_keys').columns(['user_id', 'created_at']).execute()

  await db.schema
    .createTable('funding_wallets')
    .addColumn('user_id', 'uuid', (c) => c.primaryKey().references('users.id').onDelete('cascade'))
    .addColumn('address', 'text', (c) => c.notNull().unique())
    .addColumn('encrypted_key', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute()

  await db.schema
    .createTable('agents')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('user_id', 'uuid', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    // EIP-55 checksummed
    .addColumn('address', 'text', (c) => c.notNull().unique())
    .addColumn('encrypted_key', 'text', (c) => c.notNull())
    // spend caps in atomic units of USDC; null = no cap (enforced by the buyer-side payer)
    .addColumn('cap_per_transaction', sql`numeric(78,0)`, (c) => c.check(sql`cap_per_transaction >= 0`))
    .addColumn('cap_daily', sql`numeric(78,0)`, (c) => c.check(sql`cap_daily >= 0`))
    .addColumn('cap_monthly', sql`numeric(78,0)`, (c) => c.check(sql`cap_monthly >= 0`))
    .addColumn('top_up_enabled', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('top_up_threshold', sql`numeric(78,0)`, (c) =>
      c
        .notNull()
        .defaultTo(0)
        .check(sql`top_up_threshold >= 0`),
    )
    .addColumn('top_up_amount', sql`numeric(78,0)`, (c) =>
      c
        .notNull()
        .defaultTo(0)
        .check(sql`top_up_amount >= 0`),
    )
    .addColumn('top_up_source', 'text', (c) =>
      c
        .notNull()
        .defaultTo('funding_wallet')
        .check(sql`top_up_source in ('funding_wallet')`),
    )
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute()
  await db.schema.createIndex('agents_user_idx').on('agents').columns(['user_id', 'created_at']).execute()
  await sql`create index agents_address_lower_idx on agents (lower(address))`.execute(db)

  await db.schema
    .createTable('agent_keys')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('agent_id', 'uuid', (c) => c.notNull().references('agents.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('prefix', 'text', (c) => c.notNull())
    .addColumn('last4', 'text', (c) => c.notNull())
    .addColumn('secret_hash', 'text', (c) => c.notNull().unique())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('last_used_at', 'timestamptz')
    .addColumn('revoked_at', 'timestamptz')
    .execute()
  await db.schema.createIndex('agent_keys_agent_idx').on('agent_keys').columns(['agent_id', 'created_at']).execute()

  await db.schema
    .createTable('agent_allowlist')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('agent_id', 'uuid', (c) => c.notNull().references('agents.id').onDelete('cascade'))
    .addColumn('kind', 'text', (c) => c.notNull().check(sql`kind in ('pay_to','namespace','host')`))
    // normalised: pay_to lower-case hex, namespace and host lower-case
    .addColumn('value', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addUniqueConstraint('agent_allowlist_unique', ['agent_id', 'kind', 'value'])
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const t of [
    'agent_allowlist',
    'agent_keys',
    'agents',
    'funding_wallets',
    'api_keys',
    'user_sessions',
    'users',
  ]) {
    await db.schema.dropTable(t).execute()
  }
}

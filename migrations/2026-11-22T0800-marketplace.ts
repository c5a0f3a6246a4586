import { sql, type Kysely } from 'kysely'

// Curated marketplace entries of the `catalog` and `bazaar` sources, with their endpoints and skills.
// `platform` entries are not stored: they are derived from sellers/services/endpoints on read.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('curated_agents')
    // text, not uuid: catalog entries carry readable ids from catalog/catalog.json
    .addColumn('id', 'text', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()::text`))
    .addColumn('source', 'text', (c) => c.notNull().check(sql`source in ('catalog','bazaar')`))
    // bazaar review state; catalog entries are always approved
    .addColumn('status', 'text', (c) =>
      c
        .notNull()
        .defaultTo('approved')
        .check(sql`status in ('pending','approved','rejected')`),
    )
    // catalog entries from the file are rewritten by syncCatalog; operator-created ones never are
    .addColumn('managed_by', 'text', (c) =>
      c
        .notNull()
        .defaultTo('operator')
        .check(sql`managed_by in ('file','operator','submitter')`),
    )
    .addColumn('content_hash', 'text')
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('category', 'text', (c) => c.notNull())
    .addColumn('tags', sql`text[]`, (c) => c.notNull().defaultTo(sql`'{}'::text[]`))
    .addColumn('url', 'text')
    .addColumn('logo_url', 'text')
    .addColumn('docs_url', 'text')
    .addColumn('platform_agent_address', 'text')
    .addColumn('enabled', 'boolean', (c) => c.notNull().defaultTo(true))
    .addColumn('submitter_ip', 'text')
    .addColumn('contact', 'text')
    .addColumn('review_note', 'text')
    .addColumn('reviewed_at', 'timestamptz')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute()
  await db.schema
    .createIndex('curated_agents_source_status_idx')
    .on('curated_agents')
    .columns(['source', 'status'])
    .execute()

  await db.schema
    .createTable('curated_agent_endpoints')
    .addColumn('id', 'text', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()::text`))
    .addColumn('curated_agent_id', 'text', (c) => c.notNull().references('curated_agents.id').onDelete('cascade'))
    .addColumn('position', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('methods', sql`text[]`, (c) =>
      c
        .notNull()
        .check(
          sql`cardinality(methods) > 0 and methods <@ array['GET','POST','PUT','PATCH','DELETE','OPTIONS']::text[]`,
        ),
    )
    .addColumn('x402_enabled', 'boolean', (c) => c.notNull().defaultTo(true))
    .addColumn('x402_protocol_version', 'smallint', (c) => c.notNull().check(sql`x402_protocol_version in (1, 2)`))
    .addColumn('network', 'text')
    .addColumn('description', 'text')
    .addColumn('enabled', 'boolean', (c) => c.notNull().defaultTo(true))
    // pricing_config: amount and amountAtomicUnit both carry the price in atomic units
    .addColumn('amount', sql`numeric(78,0)`, (c) => c.notNull().check(sql`amount >= 0`))
    .addColumn('currency', 'text', (c) => c.notNull().defaultTo('USDC'))
    .addColumn('network_caip2_id', 'text', (c) => c.notNull())
    .addColumn('asset_address', 'text', (c) => c.notNull())
    .addColumn('pay_to', 'text')
    .addColumn('x402_schema', 'text', (c) => c.check(sql`x402_schema in ('exact','deferred')`))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute()
  await db.schema
    .createIndex('curated_agent_endpoints_agent_idx')
    .on('curated_agent_endpoints')
    .columns(['curated_agent_id', 'position'])
    .execute()

  await db.schema
    .createTable('curated_agent_skills')
    .addColumn('id', 'text', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()::text`))
    .addColumn('curated_agent_id', 'text', (c) => c.notNull().references('curated_agents.id').onDelete('cascade'))
    .addColumn('position', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('instructions', 'jsonb')
    .addColumn('docs_url', 'text')
    .addColumn('skillmd_url', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute()
  await db.schema
    .createIndex('curated_agent_skills_agent_idx')
    .on('curated_agent_skills')
    .columns(['curated_agent_id', 'position'])
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('curated_agent_skills').execute()
  await db.schema.dropTable('curated_agent_endpoints').execute()
  await db.schema.dropTable('curated_agents').execute()
}

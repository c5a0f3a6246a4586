import { sql, type Kysely } from 'kysely'

// Sellers own namespaces; a service has one receiver (pay_to); endpoints are what the proxy serves.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('sellers')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('namespace', 'text', (c) => c.notNull().unique())
    .addColumn('display_name', 'text', (c) => c.notNull())
    .addColumn('owner_user_id', 'uuid')
    // set when the seller is a platform agent (marketplace platform_agent_address)
    .addColumn('agent_address', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute()

  await db.schema
    .createTable('services')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('seller_id', 'uuid', (c) => c.notNull().references('sellers.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('display_name', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('category', 'text', (c) => c.notNull().defaultTo('Other'))
    .addColumn('tags', sql`text[]`, (c) => c.notNull().defaultTo(sql`'{}'::text[]`))
    .addColumn('pay_to', 'text', (c) => c.notNull())
    .addColumn('website_url', 'text')
    .addColumn('docs_url', 'text')
    .addColumn('logo_url', 'text')
    .addColumn('enabled', 'boolean', (c) => c.notNull().defaultTo(true))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addUniqueConstraint('services_seller_name_unique', ['seller_id', 'name'])
    .execute()

  await db.schema
    .createTable('endpoints')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('service_id', 'uuid', (c) => c.notNull().references('services.id').onDelete('cascade'))
    .addColumn('slug', 'text', (c) => c.notNull())
    .addColumn('methods', sql`text[]`, (c) => c.notNull())
    .addColumn('price', sql`numeric(78,0)`, (c) => c.notNull().check(sql`price > 0`))
    .addColumn('settlement_mode', 'text', (c) =>
      c
        .notNull()
        .defaultTo('async')
        .check(sql`settlement_mode in ('async','sync')`),
    )
    .addColumn('description', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('mime_type', 'text', (c) => c.notNull().defaultTo('application/json'))
    .addColumn('input_schema', 'jsonb')
    // exactly one target: a hosted handler name, or the seller's upstream origin
    .addColumn('handler', 'text')
    .addColumn('upstream_url', 'text')
    // upstream options: forwarded headers (encrypted values), timeout, signing secret (encrypted), rate limit
    .addColumn('upstream_config', 'jsonb')
    .addColumn('enabled', 'boolean', (c) => c.notNull().defaultTo(true))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addUniqueConstraint('endpoints_service_slug_unique', ['service_id', 'slug'])
    .addCheckConstraint('endpoints_one_target', sql`(handler is null) <> (upstream_url is null)`)
    .execute()

  await db.schema
    .alterTable('payments')
    .addForeignKeyConstraint('payments_endpoint_fk', ['endpoint_id'], 'endpoints', ['id'])
    .onDelete('set null')
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('payments').dropConstraint('payments_endpoint_fk').execute()
  await db.schema.dropTable('endpoints').execute()
  await db.schema.dropTable('services').execute()
  await db.schema.dropTable('sellers').execute()
}

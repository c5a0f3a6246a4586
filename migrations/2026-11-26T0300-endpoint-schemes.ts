import { sql, type Kysely } from 'kysely'

// The payment schemes an endpoint offers in its challenge (v2 `accepts`). `exact` always: the v1
// body carries only exact, and every x402 client can pay it. Which other names are valid is the
// application's to say (src/schemes/names.ts); the database keeps exact present and the list short.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table endpoints add column schemes text[] not null default '{exact}'`.execute(db)
  await sql`alter table endpoints add constraint endpoints_schemes_exact check ('exact' = any (schemes) and cardinality(schemes) <= 8)`.execute(
    db,
  )
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table endpoints drop column schemes`.execute(db)
}

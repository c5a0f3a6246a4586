import { sql, type Kysely } from 'kysely'

// A user's sellers are looked up by owner on every history page (the endpoints the user sells,
// src/services/accounts/history-export.ts) and on every publishing call that lists or checks a
// namespace. Without an index each was a sequential scan of all sellers: with the marketplace's
// 10,000 sellers, that read every seller row for every page of every user's history.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`create index if not exists sellers_owner_idx on sellers (owner_user_id)`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop index if exists sellers_owner_idx`.execute(db)
}

import { sql, type Kysely } from 'kysely'

// The two event logs (payment_events, agent_payment_events) are written only by statements that
// take the parent id from the parent's own INSERT/UPDATE ... RETURNING in the same statement, or
// from a row just read, and the parents are never deleted. Their foreign keys added a row-lock
// check per event on the hottest writes (about 25% of a 16-row batch's time in
// Postgres, bench/README.md), so they go; the append-only trigger on payment_events stays.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table payment_events drop constraint if exists payment_events_payment_id_fkey`.execute(db)
  await sql`alter table agent_payment_events drop constraint if exists agent_payment_events_agent_payment_id_fkey`.execute(
    db,
  )
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table payment_events add constraint payment_events_payment_id_fkey foreign key (payment_id) references payments (id)`.execute(
    db,
  )
  await sql`alter table agent_payment_events add constraint agent_payment_events_agent_payment_id_fkey foreign key (agent_payment_id) references agent_payments (id) on delete cascade`.execute(
    db,
  )
}

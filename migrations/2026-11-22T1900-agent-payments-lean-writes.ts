import { sql, type Kysely } from 'kysely'

// Every platform-signed payment inserts an agent_payments row, so its per-row costs sit on the
// buyer's hot path (bench:buyer):
// - the foreign key to agents ran a referential check per row that also takes a KEY SHARE lock
//   on the agent's row (a tuple lock written to WAL). The agent id always comes from the agent
//   row the request authenticated with, and nothing deletes agents (or users), so the cascade it
//   carried never fires;
// - agent_payments_agent_day_idx served no query: window totals read (agent_id, month_window)
//   and filter the day inside that month.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table agent_payments drop constraint if exists agent_payments_agent_id_fkey`.execute(db)
  await sql`drop index if exists agent_payments_agent_day_idx`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`create index if not exists agent_payments_agent_day_idx on agent_payments (agent_id, day_window)`.execute(
    db,
  )
  await sql`alter table agent_payments add constraint agent_payments_agent_id_fkey foreign key (agent_id) references agents (id) on delete cascade`.execute(
    db,
  )
}

import { sql, type Kysely } from 'kysely'

// Agent names are unique per user, compared without case (issue 37: `--agent research-bot` could
// not choose between two agents of that name). Agents already sharing a name keep the oldest one's
// name; each later one is renamed "<name> (<its address>)", which no other agent can have (addresses
// are unique), so the index below can be built. The name stays within 100 characters.

export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    update agents a set name = left(a.name, 55) || ' (' || a.address || ')', updated_at = now()
    from (
      select id, row_number() over (partition by user_id, lower(name) order by created_at, id) as n from agents
    ) d
    where a.id = d.id and d.n > 1
  `.execute(db)
  await sql`create unique index agents_user_name_unique on agents (user_id, lower(name))`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop index agents_user_name_unique`.execute(db)
}

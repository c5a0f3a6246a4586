import { sql, type Kysely } from 'kysely'

// A skill of a seller's upstream A2A agent, published as an endpoint: `upstream_url` is the agent's
// JSON-RPC URL (from its Agent Card) and `a2a_skill` the skill's id there.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table endpoints add column a2a_skill text`.execute(db)
  await sql`alter table endpoints add constraint endpoints_a2a_skill_upstream check (a2a_skill is null or (upstream_url is not null and mcp_tool is null and length(a2a_skill) between 1 and 128))`.execute(
    db,
  )
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table endpoints drop column a2a_skill`.execute(db)
}

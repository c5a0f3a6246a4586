import { sql, type Kysely } from 'kysely'

// A seller namespace may be linked to one of its owner's agents (PATCH /v1/sellers/{namespace});
// the marketplace then shows that agent's address as the entries' platform_agent_address. The key
// keeps the link pointing at an agent that exists: an agent that goes (with its user) unlinks it.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`update sellers set agent_address = null where agent_address is not null and agent_address not in (select address from agents)`.execute(
    db,
  )
  await sql`alter table sellers add constraint sellers_agent_fk foreign key (agent_address) references agents (address) on delete set null`.execute(
    db,
  )
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table sellers drop constraint if exists sellers_agent_fk`.execute(db)
}

import { sql, type Kysely } from 'kysely'

// The agent payment API caches an agent key's look-up (agent, caps, allowlist) in each process;
// these triggers tell every process at commit (NOTIFY tollgate_agent_auth, payload = agent id)
// when a key is revoked or added, the agent's caps, key or address change, or its allowlist does.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create function tollgate_agent_auth_notify() returns trigger language plpgsql as $$
    declare r jsonb;
    begin
      r := to_jsonb(case when tg_op = 'DELETE' then old else new end);
      perform pg_notify('tollgate_agent_auth', coalesce(r->>'agent_id', r->>'id'));
      return null;
    end $$`.execute(db)
  await sql`create trigger agent_keys_auth_notify after insert or delete or update of revoked_at, secret_hash, agent_id on agent_keys for each row execute function tollgate_agent_auth_notify()`.execute(
    db,
  )
  await sql`create trigger agents_auth_notify after delete or update of address, encrypted_key, cap_per_transaction, cap_daily, cap_monthly on agents for each row execute function tollgate_agent_auth_notify()`.execute(
    db,
  )
  await sql`create trigger agent_allowlist_auth_notify after insert or delete or update on agent_allowlist for each row execute function tollgate_agent_auth_notify()`.execute(
    db,
  )
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop trigger if exists agent_allowlist_auth_notify on agent_allowlist`.execute(db)
  await sql`drop trigger if exists agents_auth_notify on agents`.execute(db)
  await sql`drop trigger if exists agent_keys_auth_notify on agent_keys`.execute(db)
  await sql`drop function if exists tollgate_agent_auth_notify()`.execute(db)
}

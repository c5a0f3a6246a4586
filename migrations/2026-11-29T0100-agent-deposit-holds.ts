import { sql, type Kysely } from 'kysely'

// The deposit authorizations the platform signs for agent wallets (a batch-settlement deposit: an
// ERC-3009 authorization from the wallet into a channel). Each is counted in the wallet's unsettled
// total (Redis) under its hold's member (`hold_nonce`: the hold is taken before signing, and the
// official client picks the authorization's nonce itself); kept here so that a rebuild of that total
// after Redis lost it counts the ones still usable, and so that the sweep can release each once the
// chain says it was used (`authorizationState(payer, nonce)`) or is past its `valid_before` unused.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`create table agent_deposit_holds (
    payer text not null,
    nonce text not null,
    hold_nonce text not null,
    channel_id text not null,
    amount numeric(78,0) not null check (amount >= 0),
    valid_before numeric(78,0) not null,
    created_at timestamptz not null default now(),
    released_at timestamptz,
    primary key (payer, nonce)
  )`.execute(db)
  await sql`create index agent_deposit_holds_open on agent_deposit_holds (payer, valid_before) where released_at is null`.execute(
    db,
  )
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop table if exists agent_deposit_holds`.execute(db)
}

import { sql, type Kysely } from 'kysely'

// The timed withdrawal of an agent wallet's `batch-settlement` channel (issue #34 item 8): the
// platform sends `initiateWithdraw` and, once the channel's delay is over, `finalizeWithdraw` from
// the agent wallet (its key, its ETH for gas). One row per channel, written before each transaction
// is broadcast (the signed transaction, its hash and nonce), so a repeat call rebroadcasts it and
// never signs a second one; a channel with a row is not paid through again.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`create table agent_channel_withdrawals (
    id uuid primary key default gen_random_uuid(),
    channel_id text not null unique references agent_channels (channel_id) on delete cascade,
    agent_id uuid not null references agents (id) on delete cascade,
    status text not null check (status in ('initiating', 'waiting', 'finalizing', 'withdrawn')),
    amount numeric(78,0) not null,
    initiate_tx text,
    initiate_raw_tx text,
    initiate_nonce bigint,
    initiated_at timestamptz,
    finalize_after timestamptz,
    finalize_tx text,
    finalize_raw_tx text,
    finalize_nonce bigint,
    withdrawn numeric(78,0),
    requested_at timestamptz not null default now(),
    updated_at timestamptz not null default now()
  )`.execute(db)
  await sql`create index agent_channel_withdrawals_agent on agent_channel_withdrawals (agent_id)`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop table if exists agent_channel_withdrawals`.execute(db)
}

import { sql, type Kysely } from 'kysely'

// Issue #34 item 8: agent wallets pay `batch-settlement`. An agent payment row may be a channel
// voucher (`voucher_id` the channel id, `value_aggregate` its cumulative maxClaimableAmount, as a
// deferred voucher's are kept); the channels the platform opened for an agent wallet are kept
// (their immutable config, what was deposited and the highest cumulative signed); and the owner
// bounds each deposit into a channel (`cap_channel_deposit`, atomic USDC; null: 100 x the price).
export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table agent_payments drop constraint if exists agent_payments_scheme_check`.execute(db)
  await sql`alter table agent_payments add constraint agent_payments_scheme_check check (scheme in ('exact', 'deferred', 'upto', 'batch-settlement'))`.execute(
    db,
  )
  await sql`create index agent_payments_open_channel_vouchers on agent_payments (payer, pay_to, voucher_id) where scheme = 'batch-settlement' and status = 'reserved'`.execute(
    db,
  )
  await sql`alter table agents add column cap_channel_deposit numeric(78,0) check (cap_channel_deposit is null or cap_channel_deposit >= 0)`.execute(
    db,
  )
  await sql`create table agent_channels (
    channel_id text primary key,
    agent_id uuid not null references agents (id) on delete cascade,
    network text not null,
    payer text not null,
    receiver text not null,
    receiver_authorizer text not null,
    token text not null,
    withdraw_delay integer not null,
    salt text not null,
    deposited numeric(78,0) not null default 0,
    signed_max_claimable numeric(78,0) not null default 0,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now()
  )`.execute(db)
  await sql`create index agent_channels_agent on agent_channels (agent_id, receiver)`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop table if exists agent_channels`.execute(db)
  await sql`alter table agents drop column if exists cap_channel_deposit`.execute(db)
  await sql`drop index if exists agent_payments_open_channel_vouchers`.execute(db)
  await sql`alter table agent_payments drop constraint if exists agent_payments_scheme_check`.execute(db)
  await sql`alter table agent_payments add constraint agent_payments_scheme_check check (scheme in ('exact', 'deferred', 'upto'))`.execute(
    db,
  )
}

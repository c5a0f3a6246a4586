import { sql, type Kysely } from 'kysely'

// Issue #34: `batch-settlement` channels. One row per channel (the server's per-channel state of the
// spec: the latest signed cumulative voucher, what was charged, and the chain's mirrored fields),
// and one row per claim or settle transaction, recorded before it is broadcast.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`create table batch_channels (
    channel_id text primary key,
    network text not null,
    contract text not null,
    payer text not null,
    payer_authorizer text not null,
    receiver text not null,
    receiver_authorizer text not null,
    token text not null,
    withdraw_delay integer not null,
    salt text not null,
    charged numeric(78,0) not null default 0,
    signed_max_claimable numeric(78,0) not null default 0,
    signature text,
    balance numeric(78,0) not null default 0,
    total_claimed numeric(78,0) not null default 0,
    withdraw_requested_at timestamptz,
    refund_nonce numeric(78,0) not null default 0,
    onchain_synced_at timestamptz,
    last_request_at timestamptz,
    oldest_unclaimed_at timestamptz,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now()
  )`.execute(db)
  await sql`create index batch_channels_payer on batch_channels (payer)`.execute(db)
  await sql`create index batch_channels_unclaimed on batch_channels (receiver, oldest_unclaimed_at) where oldest_unclaimed_at is not null`.execute(
    db,
  )
  await sql`create table batch_transactions (
    id text primary key,
    kind text not null check (kind in ('deposit', 'claim', 'settle', 'refund')),
    network text not null,
    contract text not null,
    relayer text,
    tx_nonce integer,
    tx_hash text,
    status text not null default 'pending' check (status in ('pending', 'sent', 'confirmed', 'reverted', 'dropped')),
    channels jsonb not null default '[]'::jsonb,
    amount numeric(78,0) not null default 0,
    error text,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now()
  )`.execute(db)
  // keys the platform itself holds for a purpose (the batch-settlement receiverAuthorizer), encrypted
  // with the master key as the wallet keys are
  await sql`create table platform_keys (
    purpose text primary key,
    address text not null,
    encrypted_key text not null,
    created_at timestamptz not null default now()
  )`.execute(db)
  await sql`create index batch_transactions_open on batch_transactions (status) where status in ('pending', 'sent')`.execute(
    db,
  )
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop table if exists platform_keys`.execute(db)
  await sql`drop table if exists batch_transactions`.execute(db)
  await sql`drop table if exists batch_channels`.execute(db)
}

import { sql, type Kysely } from 'kysely'

// Issue #38: signed webhooks and alerts.
// - webhook_endpoints: a user's receivers, each with the event types it wants and its signing secret
//   (AES-GCM under the master key, as wallet keys are; shown once at creation).
// - webhook_events: the durable outbox. A row is written in the same transaction as what it reports
//   (or, for payment events, derived by the worker from payment_events behind a cursor, so the
//   proxy's group-committed hot path writes nothing more). `source_key` makes a derived event
//   idempotent; `notify` is the alert-email state of cap, balance and failure events.
// - webhook_deliveries: one per (endpoint, event), created with the event; the worker POSTs the
//   pending ones whose next_at is due and backs off on failure.
// - webhook_cursors: how far the worker has derived events from another log.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`create table webhook_endpoints (
    id uuid primary key default gen_random_uuid(),
    user_id uuid not null references users(id) on delete cascade,
    url text not null,
    events text[] not null,
    cap_near_percent integer not null default 80 check (cap_near_percent between 1 and 100),
    encrypted_secret text not null,
    disabled_at timestamptz,
    disabled_reason text,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now()
  )`.execute(db)
  await sql`create index webhook_endpoints_user_idx on webhook_endpoints (user_id, created_at)`.execute(db)

  await sql`create table webhook_events (
    id text primary key default ('evt_' || replace(gen_random_uuid()::text, '-', '')),
    user_id uuid not null references users(id) on delete cascade,
    type text not null,
    data jsonb not null default '{}'::jsonb,
    source_key text,
    notify text check (notify in ('pending', 'sent', 'skipped', 'failed')),
    created_at timestamptz not null default now()
  )`.execute(db)
  await sql`create unique index webhook_events_source_unique on webhook_events (user_id, source_key) where source_key is not null`.execute(
    db,
  )
  await sql`create index webhook_events_user_created_idx on webhook_events (user_id, created_at desc)`.execute(db)
  await sql`create index webhook_events_notify_idx on webhook_events (created_at) where notify = 'pending'`.execute(db)

  await sql`create table webhook_deliveries (
    id uuid primary key default gen_random_uuid(),
    endpoint_id uuid not null references webhook_endpoints(id) on delete cascade,
    event_id text not null references webhook_events(id) on delete cascade,
    status text not null default 'pending' check (status in ('pending', 'delivered', 'failed')),
    attempts integer not null default 0,
    next_at timestamptz not null default now(),
    locked_until timestamptz,
    response_code integer,
    latency_ms integer,
    last_error text,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now(),
    unique (endpoint_id, event_id)
  )`.execute(db)
  await sql`create index webhook_deliveries_due_idx on webhook_deliveries (next_at) where status = 'pending'`.execute(
    db,
  )
  await sql`create index webhook_deliveries_endpoint_idx on webhook_deliveries (endpoint_id, created_at desc)`.execute(
    db,
  )

  await sql`create table webhook_cursors (
    name text primary key,
    position_at timestamptz not null,
    position_id bigint not null default 0
  )`.execute(db)
  // payment events are derived from what is written after this migration
  await sql`insert into webhook_cursors (name, position_at) values ('payment_events', now())`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop table if exists webhook_cursors`.execute(db)
  await sql`drop table if exists webhook_deliveries`.execute(db)
  await sql`drop table if exists webhook_events`.execute(db)
  await sql`drop table if exists webhook_endpoints`.execute(db)
}

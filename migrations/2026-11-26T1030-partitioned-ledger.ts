import { sql, type Kysely } from 'kysely'

// payments and payment_events grow by one to four rows per paid call, so both become partitioned
// by day (RANGE on created_at, UTC days) with a default partition that takes any row no day exists
// for yet, so an insert never fails. The worker creates days ahead (workers/ledger-partitions.ts);
// `tollgate archive` detaches old days and writes them to files (docs/architecture.md, "Partitioned
// Postgres").
//
// A unique constraint of a partitioned table must contain the partition key, so (payer, nonce)
// can no longer be unique across the whole ledger: every day would be a fresh namespace. The
// replay guard moves to payment_nonces, an ordinary table keyed (payer, nonce) whose primary key
// keeps the old constraint's name. The ledger writer inserts there first (ON CONFLICT DO NOTHING)
// and records only the payments whose nonce it claimed. A row is needed only while its
// authorization can still be accepted: the proxy refuses validBefore < now + 6 s, so once
// valid_before is past (plus an hour for clocks) the nonce can never pass verification again and
// the chain's authorizationState refuses it anyway; the worker prunes those rows. Deferred
// vouchers never expire (valid_before 9999-12-31), so theirs stay, as their vouchers do.
//
// Conversion: the old tables' rows move into the new partitioned tables inside the migration's
// transaction (create, move, swap names, recreate indexes), so no row is lost; it takes an
// exclusive lock on both tables for as long as the copy takes (minutes for tens of millions of
// rows; run it in a maintenance window). settlement_batch_items.payment_id loses its foreign key:
// a key referencing a partitioned table must include created_at, which the items do not carry.
// payment_events_id_seq is kept (withdrawal_events draws its ids from it too).

const DAY_FN = `
  create or replace function ledger_ensure_partitions(first_day date, last_day date) returns integer
  language plpgsql as $$
  declare
    d date;
    t text;
    part text;
    lo timestamptz;
    hi timestamptz;
    made integer := 0;
  begin
    -- one maintainer at a time per schema (two workers may run this at once)
    perform pg_advisory_xact_lock(hashtext(current_schema() || ':ledger_partitions'));
    perform set_config('tollgate.partition_maintenance', 'on', true);
    for d in select g::date from generate_series(first_day, last_day, interval '1 day') g loop
      lo := d::timestamp at time zone 'UTC';
      hi := (d + 1)::timestamp at time zone 'UTC';
      foreach t in array array['payments', 'payment_events'] loop
        part := t || '_p' || to_char(d, 'YYYYMMDD');
        if to_regclass(format('%I.%I', current_schema(), part)) is null then
          execute format('create table %I (like %I including defaults including constraints)', part, t);
          -- rows the default partition took for this day meanwhile move into it first
          execute format(
            'with m as (delete from %I where created_at >= $1 and created_at < $2 returning *) insert into %I select * from m',
            t || '_default', part) using lo, hi;
          execute format('alter table %I attach partition %I for values from (%L) to (%L)', t, part, lo, hi);
          made := made + 1;
        end if;
      end loop;
    end loop;
    return made;
  end $$`

// payment_events stays append-only; only partition maintenance (moving a day's rows out of the
// default partition, above) may delete, and only inside its own transaction.
const APPEND_ONLY_FN = `
  create or replace function payment_events_append_only() returns trigger language plpgsql as $$
  begin
    if tg_op = 'DELETE' and current_setting('tollgate.partition_maintenance', true) = 'on' then
      return old;
    end if;
    raise exception 'payment_events is append-only';
  end $$`

const PAYMENT_INDEXES = [
  `alter table payments add constraint payments_pkey primary key (id, created_at)`,
  `create index payments_payer_nonce_idx on payments (payer, nonce)`,
  `create index payments_status_idx on payments (status, updated_at)`,
  `create index payments_payer_status_idx on payments (payer, status)`,
  `create index payments_payer_lower_created_idx on payments (lower(payer), created_at, id)`,
  `create index payments_endpoint_created_idx on payments (endpoint_id, created_at, id)`,
  `create index payments_scheme_status_idx on payments (scheme, status) where scheme <> 'exact'`,
]
const EVENT_INDEXES = [
  `alter table payment_events add constraint payment_events_pkey primary key (id, created_at)`,
  `create index payment_events_payment_idx on payment_events (payment_id, id)`,
  `create index payment_events_created_idx on payment_events (created_at, id)`,
]

export async function up(db: Kysely<any>): Promise<void> {
  const run = (s: string) => sql.raw(s).execute(db)
  await run(`lock table payments, payment_events in access exclusive mode`)
  await run(`alter table settlement_batch_items drop constraint if exists settlement_batch_items_payment_id_fkey`)
  await run(`alter sequence payment_events_id_seq owned by none`)

  await run(`alter table payments rename to payments_unpartitioned`)
  await run(`alter table payment_events rename to payment_events_unpartitioned`)
  await run(
    `create table payments (like payments_unpartitioned including defaults including constraints) partition by range (created_at)`,
  )
  await run(
    `create table payment_events (like payment_events_unpartitioned including defaults including constraints) partition by range (created_at)`,
  )
  await run(`create table payments_default partition of payments default`)
  await run(`create table payment_events_default partition of payment_events default`)
  await run(APPEND_ONLY_FN)
  await run(DAY_FN)
  // a day for every day that has rows, through a week ahead
  await run(`select ledger_ensure_partitions(
      least((now() at time zone 'UTC')::date,
            (select (min(created_at) at time zone 'UTC')::date from payments_unpartitioned),
            (select (min(created_at) at time zone 'UTC')::date from payment_events_unpartitioned)),
      (now() at time zone 'UTC')::date + 7)`)
  await run(`insert into payments select * from payments_unpartitioned`)
  await run(`insert into payment_events select * from payment_events_unpartitioned`)
  await run(`drop table payments_unpartitioned`)
  await run(`drop table payment_events_unpartitioned`)
  await run(`alter sequence payment_events_id_seq owned by payment_events.id`)
  for (const s of [...PAYMENT_INDEXES, ...EVENT_INDEXES]) await run(s)
  await run(`create trigger payment_events_no_update before update or delete on payment_events
    for each row execute function payment_events_append_only()`)

  await run(`create table payment_nonces (
      payer text not null,
      nonce text not null,
      valid_before bigint not null,
      payment_id uuid not null,
      constraint payments_payer_nonce_unique primary key (payer, nonce)
    )`)
  await run(`create index payment_nonces_valid_before_idx on payment_nonces (valid_before)`)
  // every authorization that may still be presented (and every deferred voucher)
  await run(`insert into payment_nonces (payer, nonce, valid_before, payment_id)
    select distinct on (payer, nonce) payer, nonce, valid_before, id from payments
    where valid_before >= extract(epoch from now())::bigint - 3600
    order by payer, nonce, created_at`)
}

export async function down(db: Kysely<any>): Promise<void> {
  const run = (s: string) => sql.raw(s).execute(db)
  await run(`lock table payments, payment_events in access exclusive mode`)
  await run(`drop table payment_nonces`)
  await run(`alter sequence payment_events_id_seq owned by none`)
  await run(`alter table payments rename to payments_partitioned`)
  await run(`alter table payment_events rename to payment_events_partitioned`)
  await run(`create table payments (like payments_partitioned including defaults including constraints)`)
  await run(`create table payment_events (like payment_events_partitioned including defaults including constraints)`)
  await run(`insert into payments select * from payments_partitioned`)
  await run(`insert into payment_events select * from payment_events_partitioned`)
  await run(`drop table payments_partitioned cascade`)
  await run(`drop table payment_events_partitioned cascade`)
  await run(`drop function if exists ledger_ensure_partitions(date, date)`)
  await run(`alter sequence payment_events_id_seq owned by payment_events.id`)
  for (const s of [
    `alter table payments add constraint payments_pkey primary key (id)`,
    `alter table payments add constraint payments_payer_nonce_unique unique (payer, nonce)`,
    ...PAYMENT_INDEXES.slice(2),
    `alter table payment_events add constraint payment_events_pkey primary key (id)`,
    ...EVENT_INDEXES.slice(1),
  ])
    await run(s)
  await run(`create or replace function payment_events_append_only() returns trigger language plpgsql as $$
    begin
      raise exception 'payment_events is append-only';
    end $$`)
  await run(`create trigger payment_events_no_update before update or delete on payment_events
    for each row execute function payment_events_append_only()`)
  await run(`alter table settlement_batch_items add constraint settlement_batch_items_payment_id_fkey
    foreign key (payment_id) references payments (id) not valid`)
}

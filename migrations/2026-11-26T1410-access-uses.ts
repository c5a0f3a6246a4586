import { sql, type Kysely } from 'kysely'

// Calls served on an x402 `sign-in-with-x` access grant (issue #27): one row per served call, so a
// buyer and a seller see them in their history (amount 0, referencing the grant's scope and the
// payment that bought it). They come as often as paid calls, so, like payments and payment_events,
// the table is partitioned by UTC day with a default partition, and ledger_ensure_partitions
// (migration 2026-11-26T1030) now creates its days too: the worker's days ahead, `tollgate archive`
// and LEDGER_RETENTION_DAYS treat its days as they treat the ledger's (src/ledger/partitions.ts).
// Every row is final when written (nothing to settle), so a day of it never holds archiving back.
// No foreign keys: payments is partitioned (a key would need created_at), and a use outlives nothing.

const ensureFn = (tables: string[]) => `
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
      foreach t in array array[${tables.map((x) => `'${x}'`).join(', ')}] loop
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

export async function up(db: Kysely<any>): Promise<void> {
  const run = (s: string) => sql.raw(s).execute(db)
  await run(`create table access_uses (
      id uuid not null default gen_random_uuid(),
      created_at timestamptz not null default now(),
      payer text not null,
      endpoint_id uuid not null,
      scope_id uuid not null,
      payment_id uuid not null,
      resource text not null,
      method text not null,
      pay_to text not null,
      primary key (id, created_at)
    ) partition by range (created_at)`)
  await run(`create table access_uses_default partition of access_uses default`)
  // the history reads a buyer's (payer) and a seller's (endpoint) rows in order, as it does payments
  await run(`create index access_uses_payer_created_idx on access_uses (payer, created_at, id)`)
  await run(`create index access_uses_endpoint_created_idx on access_uses (endpoint_id, created_at, id)`)
  await run(ensureFn(['payments', 'payment_events', 'access_uses']))
  // the days the ledger has, for this table too (today through a week ahead at least)
  await run(`select ledger_ensure_partitions((now() at time zone 'UTC')::date,
      greatest((now() at time zone 'UTC')::date + 7,
               coalesce((select max(to_date(substring(c.relname from '[0-9]{8}$'), 'YYYYMMDD'))
                 from pg_class c join pg_namespace n on n.oid = c.relnamespace and n.nspname = current_schema()
                 where c.relname ~ '^payments_p[0-9]{8}$'), (now() at time zone 'UTC')::date)))`)
}

export async function down(db: Kysely<any>): Promise<void> {
  const run = (s: string) => sql.raw(s).execute(db)
  await run(`drop table access_uses`)
  await run(ensureFn(['payments', 'payment_events']))
}

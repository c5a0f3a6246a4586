import { sql, type Kysely } from 'kysely'

// payments.endpoint_id keeps the endpoint a payment was made to; the proxy takes it from its
// in-memory endpoint table. The foreign key to endpoints (ON DELETE SET NULL) cost the paid hot
// path and could fail it:
// - every payment ran a referential check that takes a KEY SHARE lock on its endpoint's row, so
//   two batches in flight for one popular endpoint shared that row through a MultiXact: about 30 µs
//   of Postgres time per payment, 18% of the ledger statement (bench/README.md);
// - a seller deleting an endpoint while calls to it were in flight made the whole group-committed
//   INSERT fail, so every buyer in that batch, of any endpoint, got 503;
// - deleting an endpoint rewrote all its payments (SET NULL) in one transaction.
// Without it a deleted endpoint's payments keep its id, which is better evidence than null. The
// history reads a seller's payments by the ids of the endpoints the seller has now, so a deleted
// endpoint's payments leave the seller's history exactly as they did when SET NULL cleared them.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table payments drop constraint if exists payments_endpoint_fk`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  // not valid: payments of endpoints deleted meanwhile keep their ids; new rows are checked again
  await sql`alter table payments add constraint payments_endpoint_fk foreign key (endpoint_id) references endpoints (id) on delete set null not valid`.execute(
    db,
  )
}

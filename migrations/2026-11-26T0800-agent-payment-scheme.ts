import { sql, type Kysely } from 'kysely'

// An agent payment is an `exact` transfer authorization or a `deferred` voucher (issue #24). A
// voucher row's `nonce` is the voucher's EIP-712 digest (the proxy's `payments.nonce` for it) and its
// `valid_before` the ledger's "never" (vouchers have no expiry): the sweep does not expire it, and
// it is no wallet authorization, so it is left out of the wallet's unsettled total.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('agent_payments')
    .addColumn('scheme', 'text', (c) =>
      c
        .notNull()
        .defaultTo('exact')
        .check(sql`scheme in ('exact', 'deferred')`),
    )
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('agent_payments').dropColumn('scheme').execute()
}

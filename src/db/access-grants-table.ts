import type { ColumnType } from 'kysely'

/** x402 sign-in-with-x access grants, one per (payer, scope) (migration 2026-11-26T1010). */
export interface AccessGrantsTable {
  /** lower-case address */
  payer: string
  /** the endpoint's id, or its service's when the access is the service's */
  scope_id: string
  /** the latest payment that granted it */
  payment_id: string
  expires_at: ColumnType<Date, Date | string, Date | string>
  created_at: ColumnType<Date, Date | string | undefined, never>
}

/** Calls served on a sign-in, one row each (migration 2026-11-26T1410; partitioned by day). */
export interface AccessUsesTable {
  id: string
  created_at: ColumnType<Date, Date | string | undefined, never>
  /** lower-case address of the wallet that signed in */
  payer: string
  endpoint_id: string
  /** the grant's scope: the endpoint, or its service */
  scope_id: string
  /** the payment whose grant served the call */
  payment_id: string
  resource: string
  method: string
  pay_to: string
}

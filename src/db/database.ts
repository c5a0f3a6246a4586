import type { ColumnType, Generated, Insertable, Selectable, Updateable } from 'kysely'

/** numeric(78,0) comes back from pg as a decimal string; write bigint or string. */
type Numeric = ColumnType<string, string | bigint, string | bigint>
type CreatedAt = ColumnType<Date, Date | string | undefined, never>
type UpdatedAt = ColumnType<Date, Date | string | undefined, Date | string>

export type PaymentStatus = 'verified' | 'served' | 'settling' | 'settled' | 'voided' | 'failed'
export type SettlementMode = 'async' | 'sync'

export interface PaymentsTable {
  id: string
  endpoint_id: string | null
  resource: string
  method: string
  x402_version: number
  scheme: Generated<string>
  network: string
  asset: string
  payer: string
  pay_to: string
  value: Numeric
  valid_after: ColumnType<string, string | number | bigint, never>
  valid_before: ColumnType<string, string | number | bigint, never>
  nonce: string
  signature: string
  settlement_mode: Generated<SettlementMode>
  status: PaymentStatus
  tx_hash: string | null
  failure_reason: string | null
  created_at: Generated<CreatedAt>
  updated_at: Generated<UpdatedAt>
  settled_at: Date | null
}

export interface PaymentEventsTable {
  id: Generated<string>
  payment_id: string
  type: string
  from_status: PaymentStatus | null
  to_status: PaymentStatus | null
  reason: string | null
  data: ColumnType<unknown, string | null, never> | null
  created_at: Generated<CreatedAt>
}

export interface SellersTable {
  id: Generated<string>
  namespace: string
  display_name: string
  owner_user_id: string | null
  agent_address: string | null
  created_at: Generated<CreatedAt>
  updated_at: Generated<UpdatedAt>
}

export interface ServicesTable {
  id: Generated<string>
  seller_id: string
  name: string
  display_name: string
  description: string | null
  category: Generated<string>
  tags: Generated<string[]>
  pay_to: string
  website_url: string | null
  docs_url: string | null
  logo_url: string | null
  enabled: Generated<boolean>
  created_at: Generated<CreatedAt>
  updated_at: Generated<UpdatedAt>
}

export interface EndpointsTable {
  id: Generated<string>
  service_id: string
  slug: string
  methods: string[]
  price: Numeric
  settlement_mode: Generated<SettlementMode>
  description: Generated<string>
  mime_type: Generated<string>
  input_schema: ColumnType<unknown, string | null | undefined, string | null> | null
  handler: string | null
  upstream_url: string | null
  upstream_config: ColumnType<unknown, string | null | undefined, string | null> | null
  enabled: Generated<boolean>
  created_at: Generated<CreatedAt>
  updated_at: Generated<UpdatedAt>
}

/** Every table; later migrations add theirs here. */
export interface Database {
  payments: PaymentsTable
  payment_events: PaymentEventsTable
  sellers: SellersTable
  services: ServicesTable
  endpoints: EndpointsTable
}

export type Payment = Selectable<PaymentsTable>
export type NewPayment = Insertable<PaymentsTable>
export type PaymentUpdate = Updateable<PaymentsTable>
export type Endpoint = Selectable<EndpointsTable>
export type Service = Selectable<ServicesTable>
export type Seller = Selectable<SellersTable>

import type { ColumnType, Generated, Insertable, Selectable, Updateable } from 'kysely'
import type {
  AgentChannelsTable,
  AgentDepositHoldsTable,
  AgentChannelWithdrawalsTable,
  AgentPaymentEventsTable,
  AgentPaymentsTable,
} from './agent-payments-tables.js'
import type { AccessGrantsTable, AccessUsesTable } from './access-grants-table.js'
import type { BatchChannelsTable, BatchTransactionsTable, PlatformKeysTable } from './batch-channels-tables.js'
import type { PaymentIdentifiersTable } from './payment-identifiers-table.js'
import type { TopupsTable } from './topups-tables.js'
import type { WithdrawalEventsTable, WithdrawalsTable } from './withdrawals-tables.js'
import type {
  WebhookCursorsTable,
  WebhookDeliveriesTable,
  WebhookEndpointsTable,
  WebhookEventsTable,
} from './webhooks-tables.js'
import type { ApprovalsTable } from './approvals-table.js'
import type { FacilitatorBatchChannelsTable, FacilitatorSettlementsTable } from './facilitator-settlements-table.js'

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
  /** `upto`: the maximum the payment authorizes (`value` is the actual charge); null otherwise */
  max_value: ColumnType<string | null, string | bigint | null | undefined, string | bigint | null>
  /** `upto`: the witness's facilitator, the relayer that must settle it; null otherwise */
  facilitator: ColumnType<string | null, string | null | undefined, string | null>
  settlement_mode: Generated<SettlementMode>
  status: PaymentStatus
  tx_hash: string | null
  failure_reason: string | null
  created_at: CreatedAt
  updated_at: UpdatedAt
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
  created_at: CreatedAt
}

export interface SellersTable {
  id: Generated<string>
  namespace: string
  display_name: string
  owner_user_id: string | null
  agent_address: string | null
  created_at: CreatedAt
  updated_at: UpdatedAt
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
  /** x402 sign-in-with-x: a paid call to any endpoint of the service gives its payer this many minutes of access to all of them; null: off */
  access_minutes: ColumnType<number | null, number | null | undefined, number | null>
  enabled: Generated<boolean>
  created_at: CreatedAt
  updated_at: UpdatedAt
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
  /** the tool's name on the upstream MCP server at `upstream_url` (an upstream MCP tool); null for an HTTP upstream or a handler */
  mcp_tool: ColumnType<string | null, string | null | undefined, string | null>
  /** the skill's id on the seller's upstream A2A agent at `upstream_url` (an upstream A2A skill); null otherwise */
  a2a_skill: ColumnType<string | null, string | null | undefined, string | null>
  /** payment schemes offered in the challenge; `exact` always among them */
  schemes: Generated<string[]>
  /** x402 sign-in-with-x: a paid call gives its payer this many minutes of access to this endpoint; null: the service's setting */
  access_minutes: ColumnType<number | null, number | null | undefined, number | null>
  enabled: Generated<boolean>
  created_at: CreatedAt
  updated_at: UpdatedAt
}

/** Marketplace (catalog and bazaar sources; platform entries are derived). */
export type CuratedSource = 'catalog' | 'bazaar'
export type CuratedStatus = 'pending' | 'approved' | 'rejected'

export interface CuratedAgentsTable {
  id: Generated<string>
  source: CuratedSource
  status: Generated<CuratedStatus>
  managed_by: Generated<'file' | 'operator' | 'submitter'>
  content_hash: string | null
  name: string
  description: string | null
  category: string
  tags: Generated<string[]>
  url: string | null
  logo_url: string | null
  docs_url: string | null
  platform_agent_address: string | null
  enabled: Generated<boolean>
  submitter_ip: string | null
  contact: string | null
  review_note: string | null
  reviewed_at: Date | null
  // not Generated<>: CreatedAt/UpdatedAt already make the column optional on insert
  created_at: CreatedAt
  updated_at: UpdatedAt
}

export interface CuratedAgentEndpointsTable {
  id: Generated<string>
  curated_agent_id: string
  position: Generated<number>
  url: string
  methods: string[]
  x402_enabled: Generated<boolean>
  x402_protocol_version: number
  network: string | null
  description: string | null
  enabled: Generated<boolean>
  amount: Numeric
  currency: Generated<string>
  network_caip2_id: string
  asset_address: string
  pay_to: string | null
  x402_schema: 'exact' | 'deferred' | null
  // not Generated<>: CreatedAt/UpdatedAt already make the column optional on insert
  created_at: CreatedAt
  updated_at: UpdatedAt
}

export interface CuratedAgentSkillsTable {
  id: Generated<string>
  curated_agent_id: string
  position: Generated<number>
  name: string
  instructions: ColumnType<unknown, string | null | undefined, string | null> | null
  docs_url: string | null
  skillmd_url: string | null
  // not Generated<>: CreatedAt/UpdatedAt already make the column optional on insert
  created_at: CreatedAt
  updated_at: UpdatedAt
}

/**
 * Accounts (migration 0810): users, sessions, API keys, agents and their wallets, keys, allowlists.
 * Timestamps use CreatedAt/UpdatedAt directly: wrapped in Generated<> they select as the ColumnType, not Date.
 */
export interface UsersTable {
  id: Generated<string>
  email: string
  password_hash: string
  created_at: CreatedAt
  updated_at: UpdatedAt
}

export interface UserSessionsTable {
  id: Generated<string>
  user_id: string
  token_hash: string
  created_at: CreatedAt
  expires_at: Date | string
  revoked_at: Date | null
}

export interface ApiKeysTable {
  id: Generated<string>
  user_id: string
  name: string
  deployment: 'production' | 'sandbox'
  prefix: string
  last4: string
  secret_hash: string
  created_at: CreatedAt
  last_used_at: Date | null
  revoked_at: Date | null
}

export interface FundingWalletsTable {
  user_id: string
  address: string
  encrypted_key: string
  created_at: CreatedAt
}

export interface AgentsTable {
  id: Generated<string>
  user_id: string
  name: string
  address: string
  encrypted_key: string
  cap_per_transaction: Numeric | null
  cap_daily: Numeric | null
  cap_monthly: Numeric | null
  /** batch-settlement: at most this much is deposited into a channel at a time (atomic USDC); null = 100 x the price */
  cap_channel_deposit: ColumnType<string | null, string | bigint | null | undefined, string | bigint | null>
  /** approval policy (issue 38): a payment above this (atomic USDC) waits for the owner; null = never */
  approval_above: ColumnType<string | null, string | bigint | null | undefined, string | bigint | null>
  /** approval policy: more than this many calls a minute to a seller first paid under a day ago wait; null = never */
  approval_new_seller_per_minute: ColumnType<number | null, number | null | undefined, number | null>
  top_up_enabled: Generated<boolean>
  top_up_threshold: ColumnType<string, string | bigint | undefined, string | bigint>
  top_up_amount: ColumnType<string, string | bigint | undefined, string | bigint>
  top_up_source: Generated<'funding_wallet'>
  created_at: CreatedAt
  updated_at: UpdatedAt
}

export interface AgentKeysTable {
  id: Generated<string>
  agent_id: string
  name: string
  prefix: string
  last4: string
  secret_hash: string
  created_at: CreatedAt
  last_used_at: Date | null
  revoked_at: Date | null
}

export type AllowlistKind = 'pay_to' | 'namespace' | 'host'

export interface AgentAllowlistTable {
  id: Generated<string>
  agent_id: string
  kind: AllowlistKind
  value: string
  created_at: CreatedAt
}

/** Payers refused optimistic credit after a failed settlement (migration 0720). */
export interface PayerBlocksTable {
  payer: string
  reason: string
  payment_id: string | null
  created_at: CreatedAt
}

/** Settlement (migration 0830): one row per relayer transaction, recorded before broadcast. */
export type SettlementBatchStatus = 'pending' | 'confirmed' | 'reverted' | 'dropped'
export interface SettlementBatchesTable {
  id: string
  network: string
  asset: string
  relayer: string
  nonce: ColumnType<string, string | number | bigint, never>
  tx_hash: string
  raw_tx: string
  from_block: ColumnType<string, string | number | bigint, never>
  size: number
  status: SettlementBatchStatus
  gas_used: Numeric | null
  created_at: CreatedAt
  updated_at: UpdatedAt
}
export interface SettlementBatchItemsTable {
  batch_id: string
  payment_id: string
}

/** Every table; later migrations add theirs here. */
/** The `deferred` scheme's voucher store (migrations/2026-11-26T0700-deferred-vouchers.ts). */
export interface DeferredVouchersTable {
  id: Generated<string>
  escrow: string
  buyer: string
  seller: string
  asset: string
  voucher_id: string
  nonce: Numeric
  value_aggregate: Numeric
  timestamp: ColumnType<string, string | number | bigint, never>
  signature: string
  /** the voucher's EIP-712 hash; the payment's `payments.nonce` */
  digest: string
  /** what the escrow paid out for this voucher id, as last read from the chain */
  collected: ColumnType<string, string | bigint | undefined, string | bigint>
  created_at: CreatedAt
}

export interface Database {
  deferred_vouchers: DeferredVouchersTable
  settlement_batches: SettlementBatchesTable
  settlement_batch_items: SettlementBatchItemsTable
  payer_blocks: PayerBlocksTable
  payments: PaymentsTable
  payment_events: PaymentEventsTable
  payment_identifiers: PaymentIdentifiersTable
  access_grants: AccessGrantsTable
  access_uses: AccessUsesTable
  sellers: SellersTable
  services: ServicesTable
  endpoints: EndpointsTable
  curated_agents: CuratedAgentsTable
  curated_agent_endpoints: CuratedAgentEndpointsTable
  curated_agent_skills: CuratedAgentSkillsTable
  users: UsersTable
  user_sessions: UserSessionsTable
  api_keys: ApiKeysTable
  funding_wallets: FundingWalletsTable
  agents: AgentsTable
  agent_keys: AgentKeysTable
  agent_allowlist: AgentAllowlistTable
  agent_payments: AgentPaymentsTable
  agent_channels: AgentChannelsTable
  agent_deposit_holds: AgentDepositHoldsTable
  agent_channel_withdrawals: AgentChannelWithdrawalsTable
  agent_payment_events: AgentPaymentEventsTable
  topups: TopupsTable
  withdrawals: WithdrawalsTable
  withdrawal_events: WithdrawalEventsTable
  batch_channels: BatchChannelsTable
  batch_transactions: BatchTransactionsTable
  platform_keys: PlatformKeysTable
  webhook_endpoints: WebhookEndpointsTable
  webhook_events: WebhookEventsTable
  webhook_deliveries: WebhookDeliveriesTable
  webhook_cursors: WebhookCursorsTable
  approvals: ApprovalsTable
  facilitator_settlements: FacilitatorSettlementsTable
  facilitator_batch_channels: FacilitatorBatchChannelsTable
}

export type Payment = Selectable<PaymentsTable>
export type NewPayment = Insertable<PaymentsTable>
export type PaymentUpdate = Updateable<PaymentsTable>
export type Endpoint = Selectable<EndpointsTable>
export type Service = Selectable<ServicesTable>
export type Seller = Selectable<SellersTable>

import type { Withdrawal } from '../../db/withdrawals-tables.js'

export interface WithdrawalView {
  object: 'withdrawal'
  id: string
  status: Withdrawal['status']
  source: Withdrawal['source']
  /** the agent's wallet address, or null for the funding wallet */
  agent: string | null
  from: string
  to: string
  /** atomic units: USDC (6 decimals) or wei */
  amount: string
  asset: Withdrawal['asset']
  tx_hash: string | null
  /** why it failed, or why the last attempt did (it is retried) */
  error: string | null
  created_at: string
  updated_at: string
  confirmed_at: string | null
}

/** A withdrawal as the API shows it (POST …/withdrawals, GET /v1/withdrawals/{id}). */
export function withdrawalView(w: Withdrawal): WithdrawalView {
  return {
    object: 'withdrawal',
    id: w.id,
    status: w.status,
    source: w.source,
    agent: w.source === 'agent' ? w.from_address : null,
    from: w.from_address,
    to: w.to_address,
    amount: w.amount,
    asset: w.asset,
    tx_hash: w.tx_hash,
    error: w.error,
    created_at: new Date(w.created_at).toISOString(),
    updated_at: new Date(w.updated_at).toISOString(),
    confirmed_at: w.confirmed_at === null ? null : new Date(w.confirmed_at).toISOString(),
  }
}

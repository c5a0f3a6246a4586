/** The answers of agent payments (a signed payment, a dry run) and the requirement an operation pays. */
import type { ParsedChallenge, Requirement } from '../../../client/challenge.js'
import type { AgentRow } from '../../accounts/agent-auth.js'
import type { PayBody } from '../choose-requirement.js'
import type { Headroom, PaymentQuote } from '../spend-answers.js'
import type { Windows } from '../spend-windows.js'

export interface SignedPayment extends PaymentQuote {
  object: 'agent_payment'
  payment_id: string
  header: 'X-PAYMENT' | 'PAYMENT-SIGNATURE'
  value: string
  payer: string
  /** the authorization's nonce (deferred: the voucher's EIP-712 digest): with `payer`, how the seller's record is found without its id */
  nonce: string
  /** deferred: the ledger's "never" (a voucher has no expiry) */
  valid_before: string
  /** the x402 `payment-identifier` the header carries (asked for, and declared by the challenge) */
  payment_identifier?: string
  headroom: Headroom
  /** deferred: the voucher signed (what this call adds is `amount`; caps count that, not the aggregate) */
  voucher?: { id: string; nonce: string; value_aggregate: string }
  /** deferred: what the payment deposits from the agent's wallet into the escrow (not spending: it stays the agent's until vouchers are collected) */
  deposit?: string
  /** batch-settlement: the channel paid through and the cumulative voucher signed (what this call adds is `amount`) */
  channel?: { id: string; max_claimable: string }
}

export interface DryRun {
  object: 'agent_payment_preview'
  would_pay: PaymentQuote | null
  /** headroom after the payment (or now, when it would be refused) */
  headroom: Headroom
  spent: { daily: string; monthly: string }
  balance: string | null
  refusal: { code: string; message: string; [k: string]: unknown } | null
}

/** One payment being signed: the agent, its request, the requirement chosen, the caps' windows, the time. */
export interface Paying {
  agent: AgentRow
  body: PayBody
  c: Chosen
  w: Windows
  at: Date
}

/** The requirement chosen and checked, with the challenge, URL and method it came with. */
interface Chosen {
  ch: ParsedChallenge
  url: URL
  method: string
  req: Requirement
}

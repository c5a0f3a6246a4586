import type { Requirement } from '../../client/challenge.js'
import { appError, type AppError } from '../../errors.js'
import { formatUsdc } from '../../x402/usdc-amount.js'
import type { AgentRow } from '../accounts/agent-auth.js'

export interface Headroom {
  /** atomic USDC; null = no cap */
  per_transaction: string | null
  daily: string | null
  monthly: string | null
}

export interface PaymentQuote {
  /** `exact` (a transfer) or `deferred` (a voucher, plus a deposit when the escrow balance is short) */
  scheme: string
  amount: string
  pay_to: string
  network: string
  asset: string
  x402_version: 1 | 2
  max_timeout_seconds: number
  /** deferred: what the payment would deposit into the escrow (the escrow balance for the seller is short) */
  deposit?: string
}

type Caps = Pick<AgentRow, 'cap_per_transaction' | 'cap_daily' | 'cap_monthly'>

/** What the agent may still spend after `day` and `month` are spent. */
export function headroom(agent: Caps, day: bigint, month: bigint): Headroom {
  const left = (cap: string | null, used: bigint) =>
    cap === null ? null : (BigInt(cap) > used ? BigInt(cap) - used : 0n).toString()
  return {
    per_transaction: agent.cap_per_transaction,
    daily: left(agent.cap_daily, day),
    monthly: left(agent.cap_monthly, month),
  }
}

export function quote(r: Requirement): PaymentQuote {
  return {
    scheme: r.scheme,
    amount: r.amount.toString(),
    pay_to: r.payTo,
    network: r.network,
    asset: r.asset,
    x402_version: r.version,
    max_timeout_seconds: r.maxTimeoutSeconds,
    ...(r.scheme === 'upto' ? { usage_based: true as const, max_amount: r.amount.toString() } : {}),
  }
}

/** 402 `insufficient_balance`: the wallet's balance minus what is signed but not settled is below `needed`. */
export function balanceError(balance: bigint, unsettled: bigint, needed: bigint): AppError {
  const available = balance > unsettled ? balance - unsettled : 0n
  return appError(
    'insufficient_balance',
    { balance: formatUsdc(available), needed: formatUsdc(needed) },
    {
      details: {
        balance: balance.toString(),
        unsettled: unsettled.toString(),
        available: available.toString(),
        needed: needed.toString(),
      },
    },
  )
}

/** 403 `spend_cap_exceeded` for the daily or monthly cap, with what was spent and what is left. */
export function capError(agent: Caps, cap: 'daily' | 'monthly', amount: bigint, day: bigint, month: bigint): AppError {
  const limit = cap === 'daily' ? agent.cap_daily! : agent.cap_monthly!
  const used = cap === 'daily' ? day : month
  const remaining = BigInt(limit) > used ? BigInt(limit) - used : 0n
  return appError(
    'spend_cap_exceeded',
    {
      cap,
      detail: `${formatUsdc(used)} of ${formatUsdc(limit)} USDC spent in this UTC ${cap === 'daily' ? 'day' : 'month'}, ${formatUsdc(remaining)} USDC left, ${formatUsdc(amount)} USDC asked`,
    },
    {
      details: {
        cap,
        limit,
        spent: used.toString(),
        remaining: remaining.toString(),
        amount: amount.toString(),
        headroom: headroom(agent, day, month),
      },
    },
  )
}

/**
 * A payment refusal as a person reads it: caps and balances in USDC, from the refusal's numeric
 * details (atomic units, as the API and --json give them), whatever unit the platform's message
 * used. Anything else keeps the platform's message.
 */
import { formatUsdc } from '../x402/usdc-amount.js'

const DIGITS = /^\d+$/

function usdc(v: unknown): string | undefined {
  return typeof v === 'string' && DIGITS.test(v) ? `${formatUsdc(v)} USDC` : undefined
}

/**
 * @example refusalText('spend_cap_exceeded', '…', { cap: 'per_transaction', limit: '5000', amount: '10000' })
 *   // 'the price 0.01 USDC is above the per-transaction cap of 0.005 USDC'
 */
export function refusalText(code: string, message: string, d: Record<string, unknown>): string {
  if (code === 'spend_cap_exceeded') {
    const limit = usdc(d.limit)
    const amount = usdc(d.amount)
    if (!limit || !amount) return message
    if (d.cap === 'per_transaction') return `the price ${amount} is above the per-transaction cap of ${limit}`
    const period = d.cap === 'daily' ? 'UTC day' : d.cap === 'monthly' ? 'UTC month' : undefined
    const spent = usdc(d.spent)
    const left = usdc(d.remaining)
    if (!period || !spent || !left) return message
    return `the ${d.cap} spend cap of ${limit} would be exceeded: ${spent} spent in this ${period}, ${left} left, ${amount} asked`
  }
  if (code === 'insufficient_balance') {
    const available = usdc(d.available)
    const needed = usdc(d.needed)
    if (!available || !needed) return message
    return `the agent wallet can spend ${available} now (its balance minus payments signed but not yet settled); ${needed} are needed`
  }
  return message
}

/** The refusals refusalText words from their details: their details need no second, atomic, line. */
export const WORDED = new Set(['spend_cap_exceeded', 'insufficient_balance'])

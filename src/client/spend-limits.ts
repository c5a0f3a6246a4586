/**
 * The payer's own limits on a wrapped fetch, checked before anything is signed or sent: a maximum
 * per call and a budget for everything that fetch pays. They come on top of what the platform
 * enforces for an agent (its caps and allowlist); amounts are atomic USDC units (6 decimals).
 */
import { formatUsdc } from '../x402/usdc-amount.js'

export interface SpendLimits {
  /** refuse any payment above this many atomic units (1000 = 0.001 USDC); upto: its maximum */
  maxPerCall?: bigint
  /** refuse a payment that would take what this wrapped fetch paid (and holds for calls in flight) past this many atomic units */
  budget?: bigint
}

export interface SpendGuard {
  /** atomic units paid so far (an upto payment counts its charge; a call with no answer its whole amount) */
  readonly spent: bigint
  /** refuses when even `cheapest` would pass a limit: before signing */
  check(cheapest: bigint): void
  /** holds `amount` for a signed payment, or refuses; the release counts what was charged */
  hold(amount: bigint): (charged: bigint) => void
}

/**
 * Counts what is paid; refuses only where a limit is set, with the error `refuse` makes
 * (wrapFetch: a `spend_cap_exceeded` PaymentRefusedError).
 */
export function spendGuard(
  limits: SpendLimits,
  refuse: (message: string, details: Record<string, string>) => Error,
): SpendGuard {
  const { maxPerCall, budget } = limits
  for (const [name, v] of [
    ['maxPerCall', maxPerCall],
    ['budget', budget],
  ] as const)
    if (v !== undefined && (typeof v !== 'bigint' || v < 0n))
      throw new TypeError(`${name} is a bigint of atomic units, at least 0n (1000n = 0.001 USDC)`)
  let spent = 0n
  let held = 0n
  const check = (amount: bigint): void => {
    if (maxPerCall !== undefined && amount > maxPerCall)
      throw refuse(
        `the price ${formatUsdc(amount)} USDC is above this client's maximum per call of ${formatUsdc(maxPerCall)} USDC; nothing was paid`,
        { cap: 'max_per_call', limit: maxPerCall.toString(), amount: amount.toString() },
      )
    if (budget !== undefined && spent + held + amount > budget) {
      const left = budget > spent + held ? budget - spent - held : 0n
      throw refuse(
        `paying ${formatUsdc(amount)} USDC would pass this client's budget of ${formatUsdc(budget)} USDC (${formatUsdc(spent)} USDC paid, ${formatUsdc(left)} USDC left); nothing was paid`,
        {
          cap: 'budget',
          limit: budget.toString(),
          spent: spent.toString(),
          remaining: left.toString(),
          amount: amount.toString(),
        },
      )
    }
  }
  return {
    get spent() {
      return spent
    },
    check,
    hold(amount) {
      check(amount)
      held += amount
      let done = false
      return (charged) => {
        if (done) return
        done = true
        held -= amount
        spent += charged
      }
    },
  }
}

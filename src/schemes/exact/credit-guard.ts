/**
 * The payer-credit guard's second try, shared by the schemes that reserve against the payer's
 * cached balance (exact, upto): a cold cache is warmed, and an 'insufficient' on a stale balance
 * reads it once more (funded since it was cached? a top-up), then the guard runs again. Callers
 * make the first round trip themselves, so a call that needs no second try pays for nothing here.
 */
import type { GuardResult, PayerCredit } from '../../ledger/payer-credit.js'

type GuardArgs = Parameters<PayerCredit['reserve']>[0]
type GuardOutcome = { result: GuardResult; stale: boolean }

/** Whether the guard's answer wants the second try. */
export const wantsSecondTry = (g: GuardOutcome): boolean =>
  g.result === 'unknown_balance' || (g.result === 'insufficient' && g.stale)

/** The second try of `g` (one `wantsSecondTry` accepted). */
export async function guardAgain(
  credit: PayerCredit,
  readOne: (payers: string[]) => Promise<bigint[]>,
  args: GuardArgs,
  g: GuardOutcome,
): Promise<GuardOutcome> {
  if (g.result === 'unknown_balance') await credit.warm(args.asset, args.payer, readOne)
  // at most one read every 30 s per payer
  else await credit.readBalances(args.asset, [args.payer], readOne)
  return credit.reserve(args)
}

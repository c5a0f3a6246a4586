/** `tollgate budget`: the agent's balance, cap headroom and spending so far (GET /v1/agent). */
import { formatUsdc } from '../../x402/usdc-amount.js'
import { parseOptions, type Command } from '../command.js'
import { EXIT } from '../exit-codes.js'

export const BUDGET_HELP =
  "usage: tollgate budget [--json]\n\nThe agent's budget: wallet balance (and what is signed but not settled), cap headroom, what was\nspent today and this month (UTC), and the sellers it may pay. Uses the agent key.\n"

export type Budget = {
  headroom: Record<'per_transaction' | 'daily' | 'monthly', string | null>
  spent: Record<'daily' | 'monthly', string>
}

/** The cap headroom and what was spent, as `fetch --inspect` and `budget` print them. */
export function headroomLines(b: Budget): string[] {
  const cap = (x: string | null) => (x === null ? 'no cap' : `${formatUsdc(x)} USDC`)
  return [
    `  per transaction  ${cap(b.headroom.per_transaction)}`,
    `  daily (UTC)      ${cap(b.headroom.daily)}   (spent today ${formatUsdc(b.spent.daily)} USDC)`,
    `  monthly (UTC)    ${cap(b.headroom.monthly)}   (spent this month ${formatUsdc(b.spent.monthly)} USDC)`,
  ]
}

export async function budgetCommand(args: string[], cmd: Command): Promise<number> {
  const { values: v } = parseOptions(args, {}, BUDGET_HELP)
  if (v.help) {
    cmd.io.stdout(BUDGET_HELP)
    return EXIT.ok
  }
  const b = await cmd.api().agent<
    Budget & {
      address: string
      balance: string | null
      unsettled: string
      available: string | null
      balance_error: string | null
      allowlist: Array<{ kind: string; value: string }>
    }
  >('GET', '/v1/agent')
  cmd.out.result(b, [
    `agent    ${b.address}`,
    b.balance === null
      ? `balance  unavailable (${b.balance_error})`
      : `balance  ${formatUsdc(b.balance)} USDC, of which ${formatUsdc(b.unsettled)} signed and not settled yet: ${formatUsdc(b.available!)} USDC available`,
    'cap headroom:',
    ...headroomLines(b),
    `sellers  ${b.allowlist.length ? b.allowlist.map((e) => `${e.kind} ${e.value}`).join(', ') : 'any (no allowlist)'}`,
  ])
  return EXIT.ok
}

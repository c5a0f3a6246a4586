/**
 * `status`: what the agent may still spend, for an agent that budgets itself: its caps, what it
 * spent in the current UTC day and month, the headroom left, its wallet's USDC balance (cached as
 * for payments), what is signed but not settled yet, and its allowlist. The same counters `pay` uses.
 */
import type { AgentRow } from '../../accounts/agent-auth.js'
import { headroom } from '../spend-answers.js'
import { windowsAt } from '../spend-windows.js'
import type { AgentPaymentsContext } from './context.js'
import { reserve } from './reserve.js'

export async function agentStatus(ctx: AgentPaymentsContext, agent: AgentRow) {
  const at = ctx.now()
  let balance: bigint | null = null
  let balanceError: string | null = null
  try {
    balance = await ctx.balances.balanceOf(agent.address)
  } catch {
    balanceError = 'the chain RPC did not answer; the balance is unavailable, retry later'
  }
  const r = await reserve(ctx, agent, windowsAt(at), 0n, {
    peek: true,
    balance: balance ?? 0n,
    nowSeconds: Math.floor(at.getTime() / 1000),
  })
  const [day, month, unsettled] = 'day' in r ? [r.day, r.month, r.unsettled] : [0n, 0n, 0n]
  return {
    object: 'agent_status' as const,
    address: agent.address,
    spend_caps: { per_transaction: agent.cap_per_transaction, daily: agent.cap_daily, monthly: agent.cap_monthly },
    spent: { daily: day.toString(), monthly: month.toString() },
    headroom: headroom(agent, day, month),
    balance: balance?.toString() ?? null,
    unsettled: unsettled.toString(),
    available: balance === null ? null : (balance > unsettled ? balance - unsettled : 0n).toString(),
    balance_error: balanceError,
    allowlist: agent.allowlist,
  }
}

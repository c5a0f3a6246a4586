/**
 * Which of the checked requirements an agent pays: the first within its per-transaction cap
 * (choose-requirement.ts orders them), where batch-settlement, preferred by default on this
 * platform's own endpoints, gives way when its channel deposit cannot be made.
 */
import type { Requirement } from '../../../client/challenge.js'
import { AppError } from '../../../errors.js'
import type { AgentRow } from '../../accounts/agent-auth.js'
import { withinPerTransactionCap, type PayBody } from '../choose-requirement.js'
import type { Windows } from '../spend-windows.js'
import type { AgentPaymentsContext } from './context.js'
import { batchDepositFor } from './pay-batch.js'
import { reserve } from './reserve.js'

/**
 * The requirement to pay, or the refusal of the cheapest (`spend_cap_exceeded`). A batch-settlement
 * requirement chosen by default (the caller did not send `batch_settlement: true`) whose channel
 * needs a deposit the owner's `spend_caps.channel_deposit` does not allow, or the wallet cannot
 * cover beside what it signed, gives way to the next payable requirement (exact beside it): a
 * preference never turns a call the agent could pay into a refusal. Asked for explicitly, it is
 * refused as it would be paid.
 */
export async function payableRequirement(
  ctx: AgentPaymentsContext,
  agent: AgentRow,
  body: PayBody,
  payable: Requirement[],
  w: Windows,
): Promise<Requirement> {
  const req = withinPerTransactionCap(agent, payable)
  if (req.scheme !== 'batch-settlement' || body.batch_settlement === true) return req
  const cap = agent.cap_per_transaction === null ? null : BigInt(agent.cap_per_transaction)
  const next = payable.find((r) => r.scheme !== 'batch-settlement' && (cap === null || r.amount <= cap))
  if (!next || (await depositPossible(ctx, agent, body, req, w))) return req
  return next
}

/** Whether the channel can take the call: no deposit needed, or one within the bound that the wallet covers beside its unsettled authorizations. */
async function depositPossible(
  ctx: AgentPaymentsContext,
  agent: AgentRow,
  body: PayBody,
  req: Requirement,
  w: Windows,
): Promise<boolean> {
  let deposit: bigint | undefined
  try {
    deposit = await batchDepositFor(ctx, agent, body, req)
  } catch (err) {
    if (err instanceof AppError && err.code === 'spend_cap_exceeded') return false
    throw err
  }
  if (deposit === undefined) return true
  const balance = await ctx.balances.balanceOf(agent.address)
  const nowSeconds = Math.floor(ctx.now().getTime() / 1000)
  const r = await reserve(ctx, agent, w, 0n, { peek: true, balance, nowSeconds })
  const unsettled = 'unsettled' in r ? r.unsettled : 0n
  return balance - unsettled >= deposit
}

/**
 * `pay` with dry_run: what would be paid (and deposited), the headroom after it, what was spent,
 * the wallet balance, and the refusal a real payment would get; nothing is reserved or signed.
 */
import type { HexString } from '../../../x402/types.js'
import { AppError } from '../../../errors.js'
import type { AgentRow } from '../../accounts/agent-auth.js'
import { chooseRequirement, withinPerTransactionCap, type PayBody } from '../choose-requirement.js'
import { balanceError, capError, headroom, quote, type PaymentQuote } from '../spend-answers.js'
import type { Windows } from '../spend-windows.js'
import { checked } from './checked.js'
import type { AgentPaymentsContext } from './context.js'
import { batchDepositOf } from './pay-batch.js'
import { payableRequirement } from './payable-requirement.js'
import { depositAmountOf } from './pay-inputs.js'
import { reserve } from './reserve.js'
import type { DryRun } from './types.js'

type Refusal = DryRun['refusal']

/** The refusals a dry run reports instead of throwing. */
const REPORTED = [
  'seller_not_allowed',
  'spend_cap_exceeded',
  'insufficient_balance',
  'unsupported_requirements',
  'requirement_mismatch',
]

const refusalOf = (e: AppError): Refusal => ({ code: e.code, message: e.message, ...e.details })

export async function preview(ctx: AgentPaymentsContext, agent: AgentRow, body: PayBody, w: Windows): Promise<DryRun> {
  let amount = 0n
  let wouldPay: PaymentQuote | null = null
  let refusal: Refusal = null
  let balance: bigint | null = null
  try {
    const req = await payableRequirement(
      ctx,
      agent,
      body,
      await checked(ctx, chooseRequirement(agent, body, ctx.terms)),
      w,
    )
    amount = req.amount
    wouldPay = quote(req)
    balance = await ctx.balances.balanceOf(agent.address)
  } catch (err) {
    if (!(err instanceof AppError) || !REPORTED.includes(err.code)) throw err
    refusal = refusalOf(err)
  }
  const r = await reserve(ctx, agent, w, amount, {
    peek: true,
    balance: balance ?? 0n,
    nowSeconds: Math.floor(ctx.now().getTime() / 1000),
  })
  const day = 'day' in r ? r.day : 0n
  const month = 'month' in r ? r.month : 0n
  const unsettled = 'unsettled' in r ? r.unsettled : 0n
  if (!refusal && wouldPay) {
    const seen = await fundsCheck(ctx, agent, body, { wouldPay, amount, balance, unsettled })
    wouldPay = seen.wouldPay
    refusal = seen.refusal
  }
  if (!refusal && wouldPay) {
    const over =
      (agent.cap_daily !== null && day + amount > BigInt(agent.cap_daily) && 'daily') ||
      (agent.cap_monthly !== null && month + amount > BigInt(agent.cap_monthly) && 'monthly')
    if (over) refusal = refusalOf(capError(agent, over, amount, day, month))
  }
  const after = refusal ? 0n : amount
  return {
    object: 'agent_payment_preview',
    would_pay: refusal ? null : wouldPay,
    headroom: headroom(agent, day + after, month + after),
    spent: { daily: day.toString(), monthly: month.toString() },
    balance: balance?.toString() ?? null,
    refusal,
  }
}

/** What the wallet would pay (a voucher: only its deposit) and whether it can, beside what is signed. */
async function fundsCheck(
  ctx: AgentPaymentsContext,
  agent: AgentRow,
  body: PayBody,
  o: { wouldPay: PaymentQuote; amount: bigint; balance: bigint | null; unsettled: bigint },
): Promise<{ wouldPay: PaymentQuote; refusal: Refusal }> {
  const { wouldPay, amount, balance, unsettled } = o
  // a voucher draws on the escrow, not the wallet: the wallet pays only a deposit (shown, not checked here)
  if (wouldPay.scheme === 'deferred') {
    const plan = await checked(ctx, chooseRequirement(agent, body, ctx.terms))
      .then((payable) => ctx.vouchers!.plan(agent.address as HexString, withinPerTransactionCap(agent, payable)))
      .catch(() => undefined)
    if (!plan || plan.balance >= plan.owed) return { wouldPay, refusal: null }
    const want = depositAmountOf(body, amount)
    const deposit = (want > plan.owed - plan.balance ? want : plan.owed - plan.balance).toString()
    return { wouldPay: { ...wouldPay, deposit }, refusal: null }
  }
  if (wouldPay.scheme === 'batch-settlement') {
    // a voucher draws on the channel: the wallet pays only a deposit, bounded by the owner's setting (shown before it happens)
    try {
      const d = await batchDepositOf(ctx, agent, body, amount)
      if (d === undefined) return { wouldPay, refusal: null }
      const shown = { ...wouldPay, deposit: d.toString() }
      const short = balance !== null && balance - unsettled < d
      return { wouldPay: shown, refusal: short ? refusalOf(balanceError(balance, unsettled, d)) : null }
    } catch (err) {
      if (!(err instanceof AppError) || err.code !== 'spend_cap_exceeded') throw err
      return { wouldPay, refusal: refusalOf(err) }
    }
  }
  if (balance !== null && balance - unsettled < amount)
    return { wouldPay, refusal: refusalOf(balanceError(balance, unsettled, amount)) }
  return { wouldPay, refusal: null }
}

/**
 * `pay`: signs a payment for the challenge in the chosen requirement's scheme, or (dry_run) says
 * what would be paid; held for a human's approval when the owner's policy says so.
 */
import type { Requirement } from '../../../client/challenge.js'
import { appError } from '../../../errors.js'
import { isValidPaymentId } from '../../../x402/payment-identifier.js'
import type { AgentRow } from '../../accounts/agent-auth.js'
import type { ApprovalPending, ApprovalTerms } from '../../approvals/approvals.js'
import { chooseRequirement, type PayBody } from '../choose-requirement.js'
import { windowsAt } from '../spend-windows.js'
import { checked } from './checked.js'
import type { AgentPaymentsContext } from './context.js'
import { batchDepositFor, payBatch } from './pay-batch.js'
import { payDeferred } from './pay-deferred.js'
import { payExact } from './pay-exact.js'
import { payUpto } from './pay-upto.js'
import { payableRequirement } from './payable-requirement.js'
import { preview } from './preview.js'
import type { DryRun, Paying, SignedPayment } from './types.js'

export async function pay(
  ctx: AgentPaymentsContext,
  who: string | AgentRow,
  body: PayBody,
): Promise<SignedPayment | DryRun | ApprovalPending> {
  if (body.dry_run !== undefined && typeof body.dry_run !== 'boolean')
    throw appError(
      'invalid_parameter',
      { param: 'dry_run', detail: 'expected true or false' },
      { details: { param: 'dry_run' } },
    )
  const agent = typeof who === 'string' ? await ctx.auth.load(who) : who
  const at = ctx.now()
  const w = windowsAt(at)
  if (body.dry_run) return preview(ctx, agent, body, w)
  if (body.payment_identifier !== undefined && !isValidPaymentId(body.payment_identifier)) {
    throw appError(
      'invalid_parameter',
      {
        param: 'payment_identifier',
        detail: 'expected 16-128 characters of letters, digits, - and _ (x402 payment-identifier)',
      },
      { details: { param: 'payment_identifier' } },
    )
  }
  const choice = chooseRequirement(agent, body, ctx.terms)
  const { ch, url, method } = choice
  const req = await payableRequirement(ctx, agent, body, await checked(ctx, choice), w)
  const c = { ch, url, method, req }
  const sign = () => signChosen(ctx, { agent, body, c, w, at })
  const held: ApprovalTerms = {
    url: url.href,
    method,
    payTo: req.payTo,
    amount: req.amount,
    ...(await depositToShow(ctx, agent, body, req)),
    scheme: req.scheme,
    network: req.network,
  }
  // human approval (services/approvals): a retry with the approval id signs once; else the policy may hold it
  if (body.approval_id !== undefined) return ctx.approvals.useApproved(agent, body.approval_id, held, sign)
  return (await ctx.approvals.hold(agent, held)) ?? sign()
}

/**
 * A batch-settlement payment's deposit into the agent's channel, for the owner deciding on it: read
 * only when the agent has an approval policy (else nothing can be held).
 */
async function depositToShow(
  ctx: AgentPaymentsContext,
  agent: AgentRow,
  body: PayBody,
  req: Requirement,
): Promise<{ deposit?: bigint }> {
  if (req.scheme !== 'batch-settlement') return {}
  if (agent.approval_above == null && agent.approval_new_seller_per_minute == null) return {}
  const deposit = await batchDepositFor(ctx, agent, body, req)
  return deposit === undefined ? {} : { deposit }
}

/** Signs the chosen requirement in its scheme (caps, balance and reservation first). */
function signChosen(ctx: AgentPaymentsContext, p: Paying): Promise<SignedPayment> {
  const { agent, c } = p
  if (c.req.scheme === 'deferred') return payDeferred(ctx, p)
  if (c.req.scheme === 'batch-settlement')
    return ctx.voucherLock.hold(agent.address, c.req.payTo, () => payBatch(ctx, p))
  if (c.req.scheme === 'upto') return payUpto(ctx, p)
  return payExact(ctx, p)
}

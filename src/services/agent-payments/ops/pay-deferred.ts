/**
 * deferred: a voucher from the custodial key. The caps count this call's price (the increment),
 * never the aggregate; the wallet balance is checked only for a deposit, which the payment carries
 * when the escrow balance for the seller is short (`deposit_amount`, default 100 x the price).
 */
import { sql } from 'kysely'
import { hashTypedData } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { signDeferred } from '../../../client/sign-deferred.js'
import { DEFERRED_NO_EXPIRY } from '../../../schemes/deferred/deferred-scheme.js'
import { voucherTypedData } from '../../../schemes/deferred/typed-data.js'
import type { HexString } from '../../../x402/types.js'
import type { VoucherPlan } from '../agent-vouchers.js'
import { releaseSuperseded } from '../spend-release.js'
import type { AgentPaymentsContext } from './context.js'
import { depositAmountOf, requirementColumns } from './pay-inputs.js'
import { holdUnsettled, reserve } from './reserve.js'
import type { Paying, SignedPayment } from './types.js'
import { voucherPayment, type RecordedVoucher } from './voucher-payment.js'

export async function payDeferred(ctx: AgentPaymentsContext, p: Paying): Promise<SignedPayment> {
  // one at a time per (wallet, seller): each voucher is planned on what the previous one left
  return ctx.voucherLock.hold(p.agent.address, p.c.req.payTo, () => signVoucher(ctx, p))
}

async function signVoucher(ctx: AgentPaymentsContext, p: Paying): Promise<SignedPayment> {
  const { agent, body, c, w, at } = p
  const { req } = c
  const nowSeconds = Math.floor(at.getTime() / 1000)
  const want = depositAmountOf(body, req.amount)
  const plan = await ctx.vouchers!.plan(agent.address as HexString, req)
  const deposit =
    plan.balance >= plan.owed ? undefined : want > plan.owed - plan.balance ? want : plan.owed - plan.balance
  const payer = agent.address.toLowerCase()
  // the deposit authorization can move wallet funds until it expires: counted as unsettled, like a transfer
  const held =
    deposit === undefined ? undefined : await holdUnsettled(ctx, agent, deposit, nowSeconds, nowSeconds + 3600)
  const r = await reserve(ctx, agent, w, req.amount, { balance: undefined, nowSeconds })
  return voucherPayment(ctx, p, {
    r,
    held,
    deposit,
    back: -req.amount,
    record: () => recordVoucher(ctx, p, { plan, deposit, nowSeconds }),
    // what this voucher makes uncollectable beyond itself stops counting (never what it builds on)
    supersede: (v) =>
      releaseSuperseded(ctx.db, ctx.windows, {
        rowId: v.id,
        payer,
        payTo: req.payTo.toLowerCase(),
        voucherId: v.voucherId,
        base: v.aggregate - req.amount,
        aggregate: v.aggregate,
      }),
  })
}

/** Signs the next voucher on the plan and writes its row. */
async function recordVoucher(
  ctx: AgentPaymentsContext,
  p: Paying,
  o: { plan: VoucherPlan; deposit: bigint | undefined; nowSeconds: number },
): Promise<RecordedVoucher> {
  const { agent, c, w } = p
  const { req } = c
  const account = privateKeyToAccount(`0x${ctx.keys.privateKeyOf(agent).toString('hex')}`)
  // a later timestamp than this wallet's last voucher to the seller: two vouchers on one head in the
  // same second would otherwise be the same voucher (same digest), recorded once
  const last = await ctx.db
    .selectFrom('agent_payments')
    .select(sql<string | null>`max(valid_after)`.as('t'))
    .where('payer', '=', agent.address.toLowerCase())
    .where('pay_to', '=', req.payTo.toLowerCase())
    .where('scheme', '=', 'deferred')
    .executeTakeFirst()
  const timestamp = Math.max(o.nowSeconds, last?.t ? Number(last.t) + 1 : 0)
  const signed = await signDeferred(account, o.plan.terms, { deposit: o.deposit, nowSeconds: timestamp })
  const digest = hashTypedData(voucherTypedData(signed.voucher)).toLowerCase()
  const id = await ctx.writer.write({
    ...requirementColumns(agent, 2, c.url, c.method, req),
    nonce: digest,
    valid_after: String(signed.voucher.timestamp),
    valid_before: String(DEFERRED_NO_EXPIRY),
    day_window: w.day,
    month_window: w.month,
    scheme: 'deferred',
  })
  const v = signed.voucher
  return {
    id,
    digest,
    payload: signed.payload,
    voucherId: v.id.toLowerCase(),
    aggregate: v.valueAggregate,
    shown: { voucher: { id: v.id, nonce: v.nonce.toString(), value_aggregate: v.valueAggregate.toString() } },
  }
}

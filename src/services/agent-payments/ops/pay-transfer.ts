/**
 * The common part of the payments that sign a transfer from the agent wallet (exact, upto): the
 * reservation against the caps and the wallet's unsettled total, the row, the header and the
 * answer; on any failure after the reservation, both are released.
 */
import { paymentHeader } from '../../../client/sign-exact.js'
import { balanceError, capError, headroom, quote } from '../spend-answers.js'
import type { Unsettled } from '../spend-windows.js'
import type { AgentPaymentsContext } from './context.js'
import { reserve } from './reserve.js'
import type { Paying, SignedPayment } from './types.js'

export async function transferPayment(
  ctx: AgentPaymentsContext,
  p: Paying,
  o: {
    balance: bigint
    /** the authorization (its nonce, maximum and validBefore) as the wallet's unsettled total counts it */
    pay: Unsettled
    nowSeconds: number
    /** signs (when not signed yet) and writes the row: its id and the payload the header carries */
    record(): Promise<{ id: string; payload: Record<string, unknown> }>
  },
): Promise<SignedPayment> {
  const { agent, body, c, w } = p
  const { req } = c
  const { balance, pay } = o
  const r = await reserve(ctx, agent, w, req.amount, { balance, pay, nowSeconds: o.nowSeconds })
  if (r.kind === 'balance') throw balanceError(balance, r.unsettled, req.amount)
  if (r.kind === 'over') throw capError(agent, r.cap, req.amount, r.day, r.month)
  if (r.kind !== 'ok') throw new Error(`unexpected spend reservation result ${r.kind}`)
  try {
    const { id, payload } = await o.record()
    const { header, value, paymentId } = paymentHeader(
      c.ch,
      req,
      payload,
      body.payment_identifier as string | undefined,
    )
    return {
      object: 'agent_payment',
      payment_id: id,
      header,
      value,
      ...quote(req),
      payer: agent.address,
      nonce: pay.nonce,
      valid_before: pay.validBefore.toString(),
      ...(paymentId ? { payment_identifier: paymentId } : {}),
      headroom: headroom(agent, r.day, r.month),
    }
  } catch (err) {
    await Promise.all([
      ctx.windows.adjust(agent.id, agent.address, w, -req.amount),
      ctx.windows.releaseUnsettled(pay),
    ]).catch(() => {})
    throw err
  }
}

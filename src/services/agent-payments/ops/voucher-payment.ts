/**
 * The common part of the voucher payments (deferred, batch-settlement), after the caps reserved
 * the price: the voucher signed and recorded, what it supersedes released, the answer built; on a
 * refusal or any failure, the reservation and the deposit's unsettled hold are undone.
 */
import { paymentHeader } from '../../../client/sign-exact.js'
import { DEFERRED_NO_EXPIRY } from '../../../schemes/deferred/deferred-scheme.js'
import { capError, headroom, quote } from '../spend-answers.js'
import type { ReserveResult, Unsettled } from '../spend-windows.js'
import type { AgentPaymentsContext } from './context.js'
import type { Paying, SignedPayment } from './types.js'

/** A voucher signed and its row written. */
export interface RecordedVoucher {
  id: string
  /** the voucher's digest (the row's nonce) */
  digest: string
  payload: Record<string, unknown>
  /** the row's voucher id (deferred: the voucher's id; batch-settlement: the channel's) and cumulative value */
  voucherId: string
  aggregate: bigint
  /** what the answer says of the voucher (`voucher` or `channel`) */
  shown: Pick<SignedPayment, 'voucher' | 'channel'>
}

export async function voucherPayment(
  ctx: AgentPaymentsContext,
  p: Paying,
  o: {
    r: ReserveResult
    /** the deposit's hold on the wallet's unsettled total, if any */
    held: Unsettled | undefined
    deposit: bigint | undefined
    /** what the caps give back on failure (minus what this call reserved) */
    back: bigint
    record(): Promise<RecordedVoucher>
    /** releases the earlier vouchers the new one makes uncollectable beyond itself */
    supersede(v: RecordedVoucher): Promise<unknown>
  },
): Promise<SignedPayment> {
  const { agent, c, w } = p
  const { r, held, deposit } = o
  const undo = async () => {
    if (held) await ctx.windows.releaseUnsettled(held).catch(() => {})
  }
  if (r.kind !== 'ok') {
    await undo()
    if (r.kind === 'over') throw capError(agent, r.cap, c.req.amount, r.day, r.month)
    throw new Error(`unexpected spend reservation result ${r.kind}`)
  }
  try {
    const v = await o.record()
    await ctx.db
      .updateTable('agent_payments')
      .set({ voucher_id: v.voucherId, value_aggregate: v.aggregate.toString() })
      .where('id', '=', v.id)
      .execute()
    await o.supersede(v)
    // with the caller's payment-identifier (x402 extension): a call whose answer was lost is asked again
    // with the very same header, and the proxy answers what it kept instead of charging twice
    const { header, value, paymentId } = paymentHeader(
      c.ch,
      c.req,
      v.payload,
      p.body.payment_identifier as string | undefined,
    )
    return {
      object: 'agent_payment',
      payment_id: v.id,
      header,
      value,
      ...quote(c.req),
      payer: agent.address,
      nonce: v.digest,
      valid_before: String(DEFERRED_NO_EXPIRY),
      ...(paymentId ? { payment_identifier: paymentId } : {}),
      headroom: headroom(agent, r.day, r.month),
      ...v.shown,
      ...(deposit !== undefined ? { deposit: deposit.toString() } : {}),
    }
  } catch (err) {
    await Promise.all([ctx.windows.adjust(agent.id, agent.address, w, o.back), undo()]).catch(() => {})
    throw err
  }
}

/**
 * `operate` of the `batch-settlement` scheme: a `refund` payload on a paid endpoint (the spec's
 * "Cooperative refund flow"), carried out in place of the call (refund.ts). The answer is 200 with
 * the spec's refund receipt: `transaction` the refund's, `amount` what was refunded, `extra.channelState`
 * the channel after it, no `chargedAmount`. A stale refund voucher gets the corrective 402; a
 * refund that cannot be decided now a 503 with `retry-after`.
 */
import { appError } from '../../errors.js'
import { CallRefusal } from '../../seam/types.js'
import type { OperationAnswer, VerifyContext } from '../scheme.js'
import type { BatchPayment } from './context.js'
import type { RefundExecutor } from './refund.js'
import { channelStateJson, corrective } from './reserve.js'
import { fail } from './verify.js'

export async function operateBatch(
  refunds: RefundExecutor,
  p: BatchPayment,
  ctx: VerifyContext,
): Promise<OperationAnswer | CallRefusal> {
  const b = p.batch
  if (b.type !== 'refund') return fail('invalid_batch_settlement_evm_payload_type', 'only a refund is an operation')
  const r = await refunds.refund(
    {
      config: b.config,
      channelId: b.channelId,
      maxClaimable: b.maxClaimable,
      signature: b.signature,
      ...(b.refundAmount === undefined ? {} : { amount: b.refundAmount }),
    },
    ctx.log,
  )
  if (!r.ok) {
    if (r.state) return corrective(b.channelId, r.state, r.reason, r.detail)
    if (r.retry)
      return CallRefusal.error(
        appError('service_unavailable', { detail: `${r.reason}: ${r.detail}` }, { headers: { 'retry-after': '2' } }),
      )
    return fail(r.reason, r.detail)
  }
  const a = r.after
  const channelState = channelStateJson(b.channelId, {
    charged: r.charged,
    signedMax: b.maxClaimable,
    signature: b.signature,
    balance: a.balance,
    totalClaimed: a.totalClaimed,
    withdrawRequestedAt: a.withdrawRequestedAt,
    refundNonce: a.refundNonce,
  })
  return {
    status: 200,
    body: { message: 'refunded', channelId: b.channelId, amount: r.refunded.toString(), transaction: r.txHash },
    receipt: {
      paymentId: r.id,
      payer: b.config.payer,
      version: 2,
      transaction: r.txHash,
      amount: r.refunded.toString(),
      extra: { channelState },
    },
  }
}

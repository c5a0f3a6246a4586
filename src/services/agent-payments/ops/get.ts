/** `get`: one payment of the agent, with the seller-side settlement when it paid this platform's proxy. */
import { appError } from '../../../errors.js'
import { paymentVerdict } from '../../../proxy/payment-verdict.js'
import type { AgentPaymentsContext } from './context.js'

export async function getPayment(ctx: AgentPaymentsContext, agentId: string, id: string) {
  const row = await findPayment(ctx, agentId, id)
  // payments to this platform's own proxy: the seller-side record knows the settlement
  const seller = await ctx.proofs.sellerRecord(row.payer, row.nonce.toLowerCase())
  const counted = row.status === 'reserved' || row.status === 'accepted'
  return {
    object: 'agent_payment' as const,
    id: row.id,
    status: row.status,
    /** whether the amount counts against the caps now */
    counted,
    /** `reserved`: until the seller settles it (counted for good) or its authorization expires unused (released) */
    counted_until: row.status === 'reserved' ? ('settlement or expiry' as const) : null,
    url: row.url,
    method: row.method,
    amount: row.amount,
    /** upto: the maximum signed; `amount` is the actual charge once the proxy recorded it */
    max_amount: row.max_amount,
    pay_to: row.pay_to,
    payer: row.payer,
    network: row.network,
    x402_version: row.x402_version,
    scheme: row.scheme,
    valid_before: row.valid_before,
    transaction: row.tx_hash ?? seller?.tx_hash ?? null,
    settlement: seller ? { payment_id: seller.id, status: seller.status, ...paymentVerdict(seller) } : null,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  }
}

/** The agent's payment row `id` (404 `not_found` when it is not one, or not the agent's). */
export async function findPayment(ctx: AgentPaymentsContext, agentId: string, id: string) {
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(id))
    throw appError('not_found', { what: 'payment' })
  const row = await ctx.db
    .selectFrom('agent_payments')
    .selectAll()
    .where('id', '=', id)
    .where('agent_id', '=', agentId)
    .executeTakeFirst()
  if (!row) throw appError('not_found', { what: 'payment' })
  return row
}

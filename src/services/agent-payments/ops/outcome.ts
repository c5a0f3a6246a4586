/**
 * `outcome`: the agent reports what the seller answered. The report is kept (an event), but it
 * never lowers the agent's spend by itself: a signature stays counted until it is provably unusable
 * on chain. For an `exact` payment reported `rejected` or `error` that the platform's proxy did not
 * record (or voided), or that went to a seller elsewhere, the platform cancels the authorization on
 * chain (chain-cancel.ts) and releases it on the receipt. Otherwise it stays `reserved` until
 * settlement or the chain decides after validBefore (the sweep); a voucher until the platform's
 * next voucher to the seller supersedes it. An `accepted` report counts it for good.
 */
import { sql, type Selectable } from 'kysely'
import type { AgentPaymentStatus, AgentPaymentsTable } from '../../../db/agent-payments-tables.js'
import { appError } from '../../../errors.js'
import type { CancelResult } from '../chain-cancel.js'
import { proofReason, type CollectionProof } from '../collection-proof.js'
import { heldOf, lowerToCharge, releaseEarly } from '../spend-release.js'
import { safeOrigin, type AgentPaymentsContext } from './context.js'
import { findPayment, getPayment } from './get.js'
import { CHARGED_STATUSES } from '../../../ledger/statuses.js'

type Row = Selectable<AgentPaymentsTable>

/** The agent's report, checked: what the seller answered and its payment response (kept as the event's data). */
interface Report {
  status: 'accepted' | 'rejected' | 'error'
  /** the payment response as JSON, or null */
  data: string | null
  /** the settlement transaction the response names, or null */
  tx: string | null
}

/** What the platform found (the proxy's record) and did (an on-chain cancellation) on the report. */
interface Decision {
  proof?: CollectionProof
  cancel?: CancelResult
}

export async function outcome(
  ctx: AgentPaymentsContext,
  agentId: string,
  id: string,
  body: { status?: unknown; payment_response?: unknown },
) {
  const report = reportOf(body)
  const row = await findPayment(ctx, agentId, id)
  await ctx.db
    .insertInto('agent_payment_events')
    .values({ agent_payment_id: row.id, type: report.status, data: report.data })
    .execute()
  const { proof, cancel } = await decide(ctx, agentId, row, report)
  // upto: the charge the platform's own proxy recorded (never the agent's word) replaces the maximum
  if (row.scheme === 'upto' && !proof?.proven) {
    const seller = await ctx.db
      .selectFrom('payments')
      .select(['value', 'status'])
      .where('payer', '=', row.payer)
      .where('nonce', '=', row.nonce)
      .executeTakeFirst()
    if (seller && CHARGED_STATUSES.includes(seller.status))
      await lowerToCharge(ctx.db, ctx.windows, row, BigInt(seller.value))
  }
  const payment = await getPayment(ctx, agentId, id)
  return { ...payment, reason: outcomeReason(payment.status, row.scheme, proof, cancel) }
}

/** The report's body checked (400 `invalid_parameter` on a bad status or payment_response). */
function reportOf(body: { status?: unknown; payment_response?: unknown }): Report {
  if (!['accepted', 'rejected', 'error'].includes(body.status as string))
    throw appError(
      'invalid_parameter',
      { param: 'status', detail: 'expected accepted | rejected | error' },
      { details: { param: 'status' } },
    )
  const response = body.payment_response === undefined || body.payment_response === null ? null : body.payment_response
  if (
    response !== null &&
    (typeof response !== 'object' || Array.isArray(response) || JSON.stringify(response).length > 4096)
  ) {
    throw appError(
      'invalid_parameter',
      { param: 'payment_response', detail: 'expected the decoded payment response object (at most 4 KB)' },
      { details: { param: 'payment_response' } },
    )
  }
  const transaction = (response as Record<string, unknown> | null)?.transaction
  return {
    status: body.status as Report['status'],
    data: response === null ? null : JSON.stringify(response),
    tx: typeof transaction === 'string' && /^0x[0-9a-fA-F]{64}$/.test(transaction) ? transaction : null,
  }
}

/** What a report does to a payment still `reserved` (nothing to one the platform decided already). */
async function decide(ctx: AgentPaymentsContext, agentId: string, row: Row, report: Report): Promise<Decision> {
  if (row.status !== 'reserved') return {}
  let proof: CollectionProof | undefined
  if (row.scheme === 'upto' && safeOrigin(row.url) === ctx.proxyOrigin) {
    // only our relayer (the witness's facilitator, checked against the registry when signed) can
    // settle it, and it never settles what the proxy voided: the ledger is the proof, whatever was reported
    proof = await ctx.proofs.check(row, { takeNonce: false })
    if (proof.proven && proof.reason === 'voided')
      await releaseEarly(ctx.db, ctx.windows, row, { kind: 'voided', seller_payment_id: proof.seller!.id })
    if (proof.proven) return { proof } // released above
  }
  if (report.status === 'accepted') {
    const updated = await ctx.db
      .updateTable('agent_payments')
      .set({ status: 'accepted', payment_response: report.data, tx_hash: report.tx, updated_at: sql`now()` })
      .where('id', '=', row.id)
      .where('status', '=', 'reserved')
      .returning(['id'])
      .executeTakeFirst()
    if (updated && report.tx) await ctx.windows.releaseUnsettled(heldOf(row), ctx.releaseAt())
    return { proof }
  }
  if (row.scheme === 'exact') return cancelUnrecorded(ctx, agentId, row)
  return { proof }
}

/**
 * exact, reported refused: the proxy's own record decides whether a cancellation could leave one
 * of our sellers unpaid: only what it never recorded (its nonce now taken, so it never will) or
 * voided is cancelled, or what went to a seller elsewhere; released on the cancellation's receipt.
 */
async function cancelUnrecorded(ctx: AgentPaymentsContext, agentId: string, row: Row): Promise<Decision> {
  const proof = await ctx.proofs.check(row, { takeNonce: true })
  if (!proof.proven && proof.reason !== 'other_seller') return { proof }
  const cancel = await ctx.cancels.cancel(ctx.keys.privateKeyOf(await ctx.auth.load(agentId)), row.payer, row.nonce)
  if (cancel.kind === 'cancelled')
    await releaseEarly(ctx.db, ctx.windows, row, {
      kind: 'cancelled',
      hash: cancel.hash,
      seller_payment_id: proof.seller?.id ?? null,
    })
  return { proof, cancel }
}

/** The outcome answer's `reason`: what the report changed, in one sentence. */
function outcomeReason(
  status: AgentPaymentStatus,
  scheme: string,
  proof: CollectionProof | undefined,
  cancel: CancelResult | undefined,
): string {
  if (cancel?.kind === 'cancelled' && status === 'expired')
    return `released: the platform cancelled the authorization on chain (${cancel.hash}), so it can never be collected`
  if (status === 'reserved') {
    if (cancel?.kind === 'not_cancelled')
      return `still counted: the platform could not cancel the authorization on chain (${cancel.reason}); settlement or expiry decides`
    if (proof && (proof.reason !== 'other_seller' || scheme === 'exact')) return proofReason(proof)
    if (scheme === 'deferred')
      return "still counted: a voucher has no expiry; it stops counting once the platform's next voucher to this seller supersedes it"
    if (scheme === 'upto')
      return 'still counted until settlement, or until its Permit2 deadline passes unused (the sweep reads the chain)'
    return 'still counted until settlement or expiry decides'
  }
  if (status === 'rejected')
    return proof?.proven ? proofReason(proof) : 'released earlier: the platform proved it will never be collected'
  if (status === 'expired') return 'released: its authorization can no longer be used on chain'
  return 'counted: the payment was accepted'
}

import type { FastifyBaseLogger } from 'fastify'
import { appError } from '../../errors.js'
import type { LedgerWriter, NewProxyPayment, RecordStatus, WriteExtras } from '../../ledger/ledger-writer.js'
import type { Reservation, VerifiedPayment } from '../../schemes/scheme.js'
import type { ResolvedCall } from './call.js'
import type { ReasonCode } from '../../x402/reasons.js'
import { CallRefusal } from './refusal.js'

/** Why a payment the ledger already holds is refused, per scheme. */
const DUPLICATE_REASON: Record<string, ReasonCode> = {
  deferred: 'invalid_deferred_evm_payload_voucher_stale',
  upto: 'permit2_invalid_nonce',
  // the channel's charge had moved since the call reserved it
  'batch-settlement': 'invalid_batch_settlement_evm_cumulative_amount_mismatch',
}

/** The ledger row of a paid call. */
export function paymentRow(
  id: string,
  call: ResolvedCall,
  payment: VerifiedPayment,
  settleFirst: boolean,
  rowFields?: Pick<NewProxyPayment, 'channel'>,
): NewProxyPayment {
  return {
    id,
    endpoint_id: call.entry.id,
    resource: call.entry.resourceUrl,
    method: call.method,
    settlement_mode: payment.settledLater ? 'async' : settleFirst ? 'sync' : call.entry.settlementMode,
    ...payment.ledgerFields,
    ...rowFields,
  }
}

/**
 * Stage 5: the durable record. Fails closed: a payment that cannot be recorded is refused (503,
 * nothing charged) and its reservation given back. A payment whose (payer, nonce) is already in
 * the ledger is a replay the Redis guard did not catch (Redis lost its keys): refused, and the
 * nonce stays taken (the other row holds it).
 *
 * `verified` records before the call (record-first: a seller's upstream, which gets the payment id,
 * or a hosted handler with effects); any other hosted call is recorded once, after its handler
 * answered, as `served` (or `voided`). A call's payment-identifier goes in the same statement: a
 * record-first call's claim with its `verified` row ('id_used' when the id is already used: nothing
 * written, the reservation given back), a hosted call's release with its one write.
 */
export async function recordPayment(
  ledger: LedgerWriter,
  row: NewProxyPayment,
  status: RecordStatus,
  held: Reservation,
  log: FastifyBaseLogger,
  reason?: string,
  extras?: WriteExtras,
): Promise<true | 'id_used' | CallRefusal> {
  let outcome
  try {
    outcome = await ledger.record(row, status, reason, extras)
  } catch (err) {
    log.error({ err: (err as Error).message }, 'payment record failed')
    await held.release()
    return CallRefusal.error(appError('payment_not_recorded'))
  }
  if (outcome === 'id_used') {
    // nothing written: the id's earlier call decides what this one gets (payment-id.ts)
    await held.release()
    return outcome
  }
  held.recorded()
  if (outcome === 'duplicate') {
    await held.release()
    return CallRefusal.payment(DUPLICATE_REASON[row.scheme ?? 'exact'] ?? 'invalid_exact_evm_nonce_already_used')
  }
  return true
}

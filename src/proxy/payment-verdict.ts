import type { PaymentStatus } from '../db/database.js'

/** What one of the proxy's payments means to the buyer who signed it. */
export interface PaymentVerdict {
  /** true: served, so settled or about to be; false: never charged here; null: the call has not ended yet */
  charged: boolean | null
  /** one sentence for a person, saying what happened and what to do */
  message: string
}

// The proxy records `served` before the answer leaves: if the process or the connection dies in
// between, the buyer is charged without an answer, and the nonce is used, so it cannot retry.
const SERVED =
  'served and charged: the endpoint answered. If you did not receive the answer, it was lost after the call ended (the connection or the proxy failed on the way back); this payment cannot be sent again (its nonce is used), so a new call needs a new payment'

/**
 * The buyer's view of a `payments` row, as the lookup routes and the agent payment API answer it.
 *
 * @example
 *   paymentVerdict({ status: 'served', failure_reason: null, tx_hash: null }).charged // true
 */
export function paymentVerdict(p: {
  status: PaymentStatus
  failure_reason: string | null
  tx_hash: string | null
}): PaymentVerdict {
  switch (p.status) {
    case 'verified':
      return {
        charged: null,
        message:
          'in progress: the call has not ended yet, or the proxy stopped before it did; it is charged only if it ends served, and a call that never ends is voided within minutes (not charged)',
      }
    case 'served':
      return { charged: true, message: `${SERVED}. It settles on chain shortly.` }
    case 'settling':
      return { charged: true, message: `${SERVED}. It is being settled on chain.` }
    case 'settled':
      return { charged: true, message: `${SERVED}. Settled in transaction ${p.tx_hash}.` }
    case 'voided':
      return {
        charged: false,
        message: `not charged: the call did not succeed (${p.failure_reason ?? 'voided'}), and this payment will never be settled`,
      }
    case 'failed':
      return { charged: false, message: `not charged: its settlement failed (${p.failure_reason ?? 'failed'})` }
  }
}

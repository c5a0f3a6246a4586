import type { FastifyBaseLogger } from 'fastify'
import { appError } from '../../errors.js'
import type { PaymentScheme, VerifiedPayment } from '../../schemes/scheme.js'
import { decodePaymentEnvelope, type PaymentHeaders } from '../../x402/decode-payment.js'
import { PAYMENT_ID_FIELD, readPaymentIdentifier } from '../../x402/payment-identifier.js'
import { refuse } from '../../x402/reasons.js'
import type { CallTarget, ResolvedCall } from './call.js'
import { CallRefusal } from './refusal.js'

export interface CheckedPayment {
  scheme: PaymentScheme
  payment: VerifiedPayment
  /** the buyer's x402 `payment-identifier` (v2 only), when it sent one */
  paymentIdentifier: string | undefined
}

/**
 * Stage 3: decode the payment the transport carried and let its scheme check it against the
 * endpoint's challenge (requirements and signature). Nothing is reserved yet. A `payment-identifier`
 * that breaks the extension's format is a 400 naming its field, before the signature is checked.
 */
export function createPaymentChecker(schemes: readonly PaymentScheme[], maxHeaderBytes: number) {
  return async function checkPayment(
    call: ResolvedCall,
    headers: PaymentHeaders,
    target: CallTarget,
    log: FastifyBaseLogger,
    nowMs: number,
  ): Promise<CheckedPayment | CallRefusal> {
    const envelope = decodePaymentEnvelope(headers, Math.max(maxHeaderBytes, call.challenge.paymentHeaderBudget))
    if (!envelope.ok) return CallRefusal.fromX402(envelope)
    const pid = readPaymentIdentifier(envelope.version === 2 ? envelope.extensions : undefined)
    if (!pid.ok)
      return CallRefusal.error(
        appError(
          'invalid_parameter',
          { param: PAYMENT_ID_FIELD, detail: pid.detail },
          { details: { param: PAYMENT_ID_FIELD } },
        ),
      )
    const named = envelope.scheme
    // the schemes this endpoint offers (its challenge's accepts); exact is always among them
    const scheme = call.entry.schemes.includes(named) ? schemes.find((s) => s.name === named) : undefined
    if (!scheme)
      return CallRefusal.fromX402(
        refuse('unsupported_scheme', `got ${JSON.stringify(named.length > 40 ? `${named.slice(0, 40)}…` : named)}`),
      )
    const payment = await scheme.verify(envelope, call.challenge, { nowMs, callMs: target.timeoutMs, log })
    if (payment instanceof CallRefusal) return payment
    return { scheme, payment, paymentIdentifier: pid.id }
  }
}

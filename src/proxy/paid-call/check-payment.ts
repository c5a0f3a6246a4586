import type { FastifyBaseLogger } from 'fastify'
import type { PaymentScheme, VerifiedPayment } from '../../schemes/scheme.js'
import { decodePaymentHeader, type PaymentHeaders } from '../../x402/decode-payment.js'
import { refuse } from '../../x402/reasons.js'
import type { CallTarget, ResolvedCall } from './call.js'
import { CallRefusal } from './refusal.js'

export interface CheckedPayment {
  scheme: PaymentScheme
  payment: VerifiedPayment
}

/**
 * Stage 3: decode the payment the transport carried and let its scheme check it against the
 * endpoint's challenge (requirements and signature). Nothing is reserved yet.
 */
export function createPaymentChecker(schemes: readonly PaymentScheme[], maxHeaderBytes: number) {
  return async function checkPayment(call: ResolvedCall, headers: PaymentHeaders, target: CallTarget, log: FastifyBaseLogger, nowMs: number): Promise<CheckedPayment | CallRefusal> {
    const decoded = decodePaymentHeader(headers, Math.max(maxHeaderBytes, call.challenge.paymentHeaderBudget))
    if (!decoded.ok) return CallRefusal.fromX402(decoded)
    const scheme = schemes.find((s) => s.accepts(decoded))
    const named = decoded.version === 1 ? decoded.payload.scheme : decoded.accepted.scheme
    if (!scheme) return CallRefusal.fromX402(refuse('unsupported_scheme', `got ${JSON.stringify(named.length > 40 ? `${named.slice(0, 40)}…` : named)}`))
    const payment = await scheme.verify(decoded, call.challenge, { nowMs, callMs: target.timeoutMs, log })
    if (payment instanceof CallRefusal) return payment
    return { scheme, payment }
  }
}

/**
 * `verify` of the `exact` scheme: the EIP-3009 authorization against the endpoint's requirement and
 * its window, and its signature (EIP-712 digest + native secp256k1 recovery; a smart wallet's is
 * checked through RPC in reserve).
 */
import { SMART_WALLET_SIGNATURE } from '../../chain/recover-signer.js'
import { transferAuthDigest } from '../../chain/transfer-auth-digest.js'
import { CallRefusal } from '../../seam/types.js'
import type { Challenge } from '../../x402/challenge.js'
import { decodeExactPayment, type PaymentEnvelope } from '../../x402/decode-payment.js'
import { minValidForSeconds, verifyRequirements } from '../../x402/verify-requirements.js'
import type { VerifyContext } from '../scheme.js'
import type { ExactContext, ExactPayment } from './context.js'

export async function verifyExact(
  x: ExactContext,
  envelope: PaymentEnvelope,
  challenge: Challenge,
  ctx: VerifyContext,
): Promise<ExactPayment | CallRefusal> {
  const { config } = x
  const payment = decodeExactPayment(envelope)
  if (!payment.ok) return CallRefusal.fromX402(payment)
  const checked = verifyRequirements(payment, challenge, Math.floor(ctx.nowMs / 1000), {
    maxValidForSeconds: config.x402.maxValidForSeconds,
    // long enough to be settled after the call: a payment that expires first would be served for nothing
    minValidForSeconds: minValidForSeconds(ctx.callMs / 1000),
  })
  if (!checked.ok) return CallRefusal.fromX402(checked)
  const auth = checked.authorization
  const digest = transferAuthDigest(x.domainSeparator, auth)
  const signer = await x.recovery.recover(digest, checked.signature)
  // a smart wallet's signature needs RPC: checked after the reservation, so that a payment
  // without funds (or replayed) costs no chain call
  const smartWallet = signer === SMART_WALLET_SIGNATURE
  if (!smartWallet && (signer === null || signer !== auth.from))
    return CallRefusal.payment('invalid_exact_evm_payload_signature')
  const verified: ExactPayment = {
    scheme: 'exact',
    version: checked.version,
    payer: auth.from,
    asset: challenge.terms.asset,
    value: auth.value,
    nonce: auth.nonce,
    validBefore: Number(auth.validBefore),
    smartWallet: smartWallet ? { digest, signature: checked.signature } : undefined,
    ledgerFields: {
      x402_version: checked.version,
      network: config.chain.caip2,
      asset: challenge.terms.asset,
      payer: auth.from,
      pay_to: auth.to,
      value: auth.value,
      valid_after: auth.validAfter,
      valid_before: auth.validBefore,
      nonce: auth.nonce,
      signature: checked.signature,
    },
  }
  return verified
}

/**
 * `verify` of the `upto` scheme: the payload's shape, the requirement match (scheme, network,
 * amount = maximum, payTo, asset), spender, witness, token, deadline and the signature (EIP-712
 * digest + native recovery; a signature longer than 65 bytes is a smart wallet's, checked in reserve).
 */
import { getAddress, hexToBytes, type Hex } from 'viem'
import { UPTO_PROXY_ADDRESS } from '../../chain/permit2.js'
import { SMART_WALLET_SIGNATURE } from '../../chain/recover-signer.js'
import { CallRefusal } from '../../seam/types.js'
import type { Challenge } from '../../x402/challenge.js'
import type { PaymentEnvelope } from '../../x402/decode-payment.js'
import { minValidForSeconds } from '../../x402/verify-requirements.js'
import type { VerifyContext } from '../scheme.js'
import { fail, type UptoContext, type UptoPayment } from './context.js'
import { decodeUptoPayload, uptoDigest, type UptoAuthorization } from './payload.js'
import { uptoNonceHex } from './typed-data.js'

/** The envelope's fit with the endpoint's upto requirement, and the authorization's terms; undefined when they fit. */
function checkTerms(
  x: UptoContext,
  envelope: Extract<PaymentEnvelope, { version: 2 }>,
  a: UptoAuthorization,
  t: Challenge['terms'],
  ctx: VerifyContext,
): CallRefusal | undefined {
  if (envelope.network !== t.networkV2)
    return fail('invalid_network', `expected ${t.networkV2}, got ${envelope.network}`)
  const acc = envelope.accepted
  if (acc.amount !== t.amount.toString() || acc.payTo.toLowerCase() !== t.payTo || acc.asset.toLowerCase() !== t.asset)
    return fail(
      'accepted_requirements_mismatch',
      'accepted must be the upto requirement of this endpoint (amount, payTo, asset)',
    )
  if (a.spender !== UPTO_PROXY_ADDRESS.toLowerCase())
    return fail('invalid_permit2_spender', `got ${getAddress(a.spender)}`)
  if (a.to !== t.payTo) return fail('invalid_permit2_recipient_mismatch', `expected ${getAddress(t.payTo)}`)
  // any of our relayers settles what names it (the challenge's choice may have moved with RELAYER_PRIVATE_KEYS)
  if (!x.ours.has(a.facilitator))
    return fail(
      'upto_facilitator_mismatch',
      `expected the challenge's facilitatorAddress, got ${getAddress(a.facilitator)}`,
    )
  if (a.token !== t.asset) return fail('permit2_token_mismatch', `expected ${getAddress(t.asset)}`)
  if (a.amount !== t.amount) return fail('permit2_amount_mismatch', `expected ${t.amount}, got ${a.amount}`)
  const now = BigInt(Math.floor(ctx.nowMs / 1000))
  if (a.validAfter > now) return fail('permit2_not_yet_valid')
  const minValid = BigInt(Math.ceil(minValidForSeconds(ctx.callMs / 1000)))
  if (a.deadline < now + minValid)
    return fail('permit2_deadline_expired', `the deadline must be at least ${minValid} s ahead`)
  if (a.deadline > now + BigInt(x.config.x402.maxValidForSeconds))
    return fail(
      'authorization_window_too_long',
      `the deadline is more than ${x.config.x402.maxValidForSeconds} s ahead`,
    )
  return undefined
}

/** The verified payment with its ledger fields. */
function uptoPayment(
  x: UptoContext,
  a: UptoAuthorization,
  signature: Hex,
  smartWallet: UptoPayment['smartWallet'],
): UptoPayment {
  const nonce = uptoNonceHex(a.nonce)
  return {
    scheme: 'upto',
    version: 2,
    payer: a.from,
    asset: a.token,
    value: a.amount,
    nonce,
    validBefore: Number(a.deadline),
    usageBased: true,
    authorization: a,
    smartWallet,
    ledgerFields: {
      scheme: 'upto',
      x402_version: 2,
      network: x.config.chain.caip2,
      asset: a.token,
      payer: a.from,
      pay_to: a.to,
      value: a.amount,
      max_value: a.amount,
      facilitator: a.facilitator,
      valid_after: a.validAfter,
      valid_before: a.deadline,
      nonce,
      signature,
    },
  }
}

export async function verifyUpto(
  x: UptoContext,
  envelope: PaymentEnvelope,
  challenge: Challenge,
  ctx: VerifyContext,
): Promise<UptoPayment | CallRefusal> {
  if (envelope.version !== 2)
    return fail('invalid_x402_version', 'the upto scheme is offered in x402 v2 only: send PAYMENT-SIGNATURE')
  const decoded = decodeUptoPayload(envelope.payload)
  if (!decoded.ok) return CallRefusal.fromX402(decoded)
  const a = decoded.authorization
  const t = challenge.terms
  const refused = checkTerms(x, envelope, a, t, ctx)
  if (refused) return refused
  const digest = hexToBytes(uptoDigest(a, t.chainId))
  const signer = await x.recovery.recover(digest, decoded.signature)
  // a smart wallet's signature needs RPC: checked after the reservation, so that a payment
  // without allowance or funds (or replayed) costs no wallet call
  const smartWallet = signer === SMART_WALLET_SIGNATURE
  if (!smartWallet && signer?.toLowerCase() !== a.from) return fail('invalid_permit2_signature')
  return uptoPayment(x, a, decoded.signature, smartWallet ? { digest, signature: decoded.signature } : undefined)
}

/**
 * `verify` of the `deferred` scheme: the payload's shape, the requirement match (network, seller =
 * payTo, asset, escrow, chainId), the voucher's signature (ECDSA, or ERC-1271 through RPC for a
 * contract buyer) and a deposit's check. No state is touched.
 */
import { bytesToHex, getAddress } from 'viem'
import { checkContractSignature } from '../../chain/contract-signature.js'
import { SMART_WALLET_SIGNATURE } from '../../chain/recover-signer.js'
import { CallRefusal } from '../../seam/types.js'
import type { Challenge } from '../../x402/challenge.js'
import type { PaymentEnvelope } from '../../x402/decode-payment.js'
import { refuse } from '../../x402/reasons.js'
import type { VerifyContext } from '../scheme.js'
import { DEFERRED_NO_EXPIRY, retryShortly, type DeferredContext, type DeferredPayment } from './context.js'
import { decodeDeferredPayload, type DeferredPayload } from './decode-payload.js'
import type { DeferredVoucher } from './typed-data.js'
import { voucherDigest } from './voucher-digest.js'

const same = (a: unknown, b: string) => typeof a === 'string' && a.toLowerCase() === b.toLowerCase()

/** the voucher's fit with the endpoint's requirement; undefined when it fits */
function mismatch(x: DeferredContext, v: DeferredVoucher, challenge: Challenge): string | undefined {
  const t = challenge.terms
  if (v.seller !== t.payTo) return `voucher.seller must be payTo ${getAddress(t.payTo)}, got ${getAddress(v.seller)}`
  if (v.asset !== t.asset) return `voucher.asset must be ${getAddress(t.asset)}, got ${getAddress(v.asset)}`
  if (v.escrow !== x.escrow)
    return `voucher.escrow must be extra.escrow ${getAddress(x.escrow)}, got ${getAddress(v.escrow)}`
  if (v.chainId !== BigInt(t.chainId)) return `voucher.chainId must be ${t.chainId} (${t.networkV2}), got ${v.chainId}`
  return undefined
}

/** The envelope's version, payload, network and accepted requirement, and the voucher's fit with the endpoint. */
function checkEnvelope(
  x: DeferredContext,
  envelope: PaymentEnvelope,
  challenge: Challenge,
): DeferredPayload | CallRefusal {
  if (envelope.version !== 2)
    return CallRefusal.fromX402(
      refuse('invalid_x402_version', 'the deferred scheme is offered in x402 v2 only: send PAYMENT-SIGNATURE'),
    )
  const decoded = decodeDeferredPayload(envelope.payload)
  if (!decoded.ok) return CallRefusal.fromX402(decoded)
  const t = challenge.terms
  if (envelope.network !== t.networkV2)
    return CallRefusal.fromX402(refuse('invalid_network', `expected ${t.networkV2}, got ${envelope.network}`))
  const a = envelope.accepted
  if (
    a.amount !== t.amount.toString() ||
    !same(a.payTo, t.payTo) ||
    !same(a.asset, t.asset) ||
    !same(a.extra?.escrow, x.escrow)
  ) {
    return CallRefusal.fromX402(
      refuse(
        'accepted_requirements_mismatch',
        'accepted must be the deferred requirement of this endpoint (amount, payTo, asset, extra.escrow)',
      ),
    )
  }
  const wrong = mismatch(x, decoded.payload.voucher, challenge)
  if (wrong) return CallRefusal.fromX402(refuse('invalid_deferred_evm_payload_voucher_mismatch', wrong))
  return decoded.payload
}

/** The verified payment with its ledger fields. */
function deferredPayment(x: DeferredContext, payload: DeferredPayload, amount: bigint): DeferredPayment {
  const { voucher, signature, deposit } = payload
  const digestBytes = voucherDigest(x.domainSeparator, voucher)
  const digest = bytesToHex(digestBytes)
  return {
    scheme: 'deferred',
    version: 2,
    payer: voucher.buyer,
    asset: voucher.asset,
    value: amount,
    nonce: digest,
    validBefore: DEFERRED_NO_EXPIRY,
    settledLater: true,
    voucher,
    signature,
    digest,
    digestBytes,
    deposit,
    ledgerFields: {
      scheme: 'deferred',
      x402_version: 2,
      network: x.config.chain.caip2,
      asset: voucher.asset,
      payer: voucher.buyer,
      pay_to: voucher.seller,
      value: amount,
      valid_after: voucher.timestamp,
      valid_before: DEFERRED_NO_EXPIRY,
      nonce: digest,
      signature,
      voucher: {
        escrow: x.escrow,
        voucher_id: voucher.id,
        nonce: voucher.nonce.toString(),
        value_aggregate: voucher.valueAggregate.toString(),
        timestamp: voucher.timestamp.toString(),
      },
    },
  }
}

async function checkSignature(
  x: DeferredContext,
  p: DeferredPayment,
  ctx: VerifyContext,
): Promise<CallRefusal | undefined> {
  // the escrow's ECDSA recovery takes v of 27 or 28 only; a voucher accepted with v 0 or 1 could never be collected
  if (p.signature.length === 132 && !p.signature.endsWith('1b') && !p.signature.endsWith('1c')) {
    return CallRefusal.fromX402(
      refuse(
        'invalid_deferred_evm_payload_signature',
        `the signature's v must be 27 or 28 (0x1b or 0x1c), as the escrow recovers it; got 0x${p.signature.slice(130)}`,
      ),
    )
  }
  const signer = await x.recovery.recover(p.digestBytes, p.signature)
  if (signer !== SMART_WALLET_SIGNATURE) {
    return signer !== null && signer === p.voucher.buyer
      ? undefined
      : CallRefusal.payment('invalid_deferred_evm_payload_signature')
  }
  try {
    const check = await checkContractSignature(x.chain, p.voucher.buyer, p.digestBytes, p.signature, {
      counterfactual: false,
    })
    return check === 'valid'
      ? undefined
      : CallRefusal.fromX402(
          refuse(
            'invalid_deferred_evm_payload_signature',
            'the buyer contract did not accept the signature (ERC-1271); is it deployed?',
          ),
        )
  } catch (err) {
    ctx.log.warn({ err: (err as Error).message }, 'contract buyer signature check failed')
    return retryShortly('the contract buyer signature could not be checked on-chain now; retry shortly')
  }
}

export async function verifyDeferred(
  x: DeferredContext,
  envelope: PaymentEnvelope,
  challenge: Challenge,
  ctx: VerifyContext,
): Promise<DeferredPayment | CallRefusal> {
  const payload = checkEnvelope(x, envelope, challenge)
  if (payload instanceof CallRefusal) return payload
  const p = deferredPayment(x, payload, challenge.terms.amount)
  const refused = await checkSignature(x, p, ctx)
  if (refused) return refused
  const { deposit, voucher } = payload
  if (deposit) {
    let bad
    try {
      bad = await x.deposits.check(deposit, voucher, Math.floor(ctx.nowMs / 1000))
    } catch (err) {
      ctx.log.warn({ err: (err as Error).message }, 'deposit check failed')
      return retryShortly('the deposit could not be checked on-chain now; retry shortly')
    }
    if (bad) return CallRefusal.fromX402(bad)
  }
  return p
}

/**
 * `verify` of the `batch-settlement` scheme: no state touched, no I/O for an EOA voucher. The
 * accepted requirement, the payload's shape, rules 1 to 5 (rules.ts), the voucher's signature
 * (rule 6) and, for a deposit, its authorization and the payer's balance (rule 8). A smart-wallet
 * payer (`payerAuthorizer` zero) has its voucher and its deposit's authorization checked by its
 * contract through RPC (ERC-1271).
 */
import { bytesToHex, type Hex } from 'viem'
import { SMART_WALLET_SIGNATURE } from '../../chain/recover-signer.js'
import { CallRefusal } from '../../seam/types.js'
import type { Challenge } from '../../x402/challenge.js'
import type { PaymentEnvelope } from '../../x402/decode-payment.js'
import { refuse, type ReasonCode } from '../../x402/reasons.js'
import { minValidForSeconds } from '../../x402/verify-requirements.js'
import type { VerifyContext } from '../scheme.js'
import { ZERO_ADDRESS } from './constants.js'
import type { BatchContext, BatchPayment } from './context.js'
import { decodeBatchPayload, type BatchPayload } from './payload.js'
import { checkChannelTerms } from './rules.js'
import { voucherDigestOf } from './typed-data.js'

/** Vouchers carry no expiry: the ledger's `valid_before` says "never" (9999-12-31). */
const NO_EXPIRY = 253_402_300_799

/**
 * What verify uses of the scheme's context: the facilitator (src/services/facilitator/batch.ts)
 * runs the same checks with the seller's terms and no channel state of its own.
 */
export type BatchVerifyContext = Pick<
  BatchContext,
  'config' | 'domain' | 'recovery' | 'smartWallets' | 'receiverAuthorizer' | 'withdrawDelay'
> & { deposits: Pick<BatchContext['deposits'], 'check'> }

export const fail = (reason: ReasonCode, detail?: string) => CallRefusal.fromX402(refuse(reason, detail))

/** Rule 6; undefined when the voucher is the payer's. */
async function checkSignature(
  x: BatchVerifyContext,
  p: BatchPayment,
  ctx: VerifyContext,
): Promise<CallRefusal | undefined> {
  const c = p.batch.config
  const digest = voucherDigestOf(x.domain, p.batch.channelId, p.batch.maxClaimable)
  const signer = await x.recovery.recover(digest, p.batch.signature)
  if (c.payerAuthorizer !== ZERO_ADDRESS)
    return signer === c.payerAuthorizer
      ? undefined
      : fail('invalid_batch_settlement_evm_voucher_signature', 'it must recover to channelConfig.payerAuthorizer')
  if (signer === c.payer) return undefined
  if (signer !== SMART_WALLET_SIGNATURE && signer === null)
    return fail('invalid_batch_settlement_evm_voucher_signature')
  // payerAuthorizer zero: SignatureChecker against the payer (ERC-1271 for a contract)
  const check = await x.smartWallets(c.payer, digest, p.batch.signature, ctx.log)
  if (check instanceof CallRefusal) return check
  return check === 'valid'
    ? undefined
    : fail('invalid_batch_settlement_evm_voucher_signature', 'the payer wallet did not accept it (ERC-1271)')
}

/** The accepted requirement must be this endpoint's batch-settlement one. */
function acceptedMismatch(envelope: Extract<PaymentEnvelope, { version: 2 }>, challenge: Pick<Challenge, 'terms'>) {
  const t = challenge.terms
  const a = envelope.accepted
  const extra = (a.extra ?? {}) as Record<string, unknown>
  if (a.scheme !== 'batch-settlement') return fail('invalid_batch_settlement_evm_scheme')
  if (envelope.network !== t.networkV2 || a.network !== t.networkV2)
    return fail('invalid_batch_settlement_evm_network_mismatch', `expected ${t.networkV2}`)
  if (typeof extra.name !== 'string' || typeof extra.version !== 'string')
    return fail('invalid_batch_settlement_evm_missing_eip712_domain')
  if (a.amount !== t.amount.toString() || a.payTo.toLowerCase() !== t.payTo || a.asset.toLowerCase() !== t.asset)
    return fail(
      'accepted_requirements_mismatch',
      'accepted must be the batch-settlement requirement of this endpoint (amount, payTo, asset)',
    )
  return undefined
}

function payment(
  x: BatchVerifyContext,
  b: BatchPayload,
  challenge: Pick<Challenge, 'terms'>,
  digest: Hex,
): BatchPayment {
  const amount = challenge.terms.amount
  return {
    scheme: 'batch-settlement',
    version: 2,
    payer: b.config.payer,
    asset: b.config.token,
    value: amount,
    nonce: digest,
    validBefore: NO_EXPIRY,
    settledLater: true,
    usageBased: true,
    ...(b.type === 'refund' ? { operation: true } : {}),
    batch: b,
    digest,
    ledgerFields: {
      scheme: 'batch-settlement',
      x402_version: 2,
      network: x.config.chain.caip2,
      asset: b.config.token,
      payer: b.config.payer,
      pay_to: b.config.receiver,
      value: amount,
      max_value: amount,
      valid_after: 0n,
      valid_before: NO_EXPIRY,
      nonce: digest,
      signature: b.signature,
    },
  }
}

async function checkDeposit(
  x: BatchVerifyContext,
  b: BatchPayload,
  ctx: VerifyContext,
): Promise<CallRefusal | undefined> {
  const window = { nowSeconds: Math.floor(ctx.nowMs / 1000), minValidSeconds: minValidForSeconds(ctx.callMs / 1000) }
  // a smart-wallet payer's authorization: its contract asked, as the token will (ERC-1271)
  const askWallet = (digest: Uint8Array, signature: Hex) => x.smartWallets(b.config.payer, digest, signature, ctx.log)
  let refused
  try {
    refused = await x.deposits.check(b.config, b.channelId, b.deposit!, window, askWallet)
  } catch (err) {
    ctx.log.warn({ err: (err as Error).message }, 'batch deposit check failed')
    return fail('invalid_batch_settlement_evm_channel_state_read_failed', 'the chain could not be read now')
  }
  if (refused instanceof CallRefusal) return refused
  return refused ? fail(refused.reason, refused.detail) : undefined
}

export async function verifyBatch(
  x: BatchVerifyContext,
  envelope: PaymentEnvelope,
  challenge: Pick<Challenge, 'terms'>,
  ctx: VerifyContext,
): Promise<BatchPayment | CallRefusal> {
  if (envelope.version !== 2)
    return fail('invalid_x402_version', 'batch-settlement is offered in x402 v2 only: send PAYMENT-SIGNATURE')
  const wrong = acceptedMismatch(envelope, challenge)
  if (wrong) return wrong
  const decoded = decodeBatchPayload(envelope.payload)
  if (!decoded.ok) return fail(decoded.reason, decoded.detail)
  const b = decoded.payload
  const t = challenge.terms
  const terms = {
    asset: t.asset,
    payTo: t.payTo,
    receiverAuthorizer: x.receiverAuthorizer,
    withdrawDelay: x.withdrawDelay,
  }
  const broken = checkChannelTerms(b, terms, x.domain)
  if (broken) return fail(broken.reason, broken.detail)
  const p = payment(x, b, challenge, bytesToHex(voucherDigestOf(x.domain, b.channelId, b.maxClaimable)))
  const bad = await checkSignature(x, p, ctx)
  if (bad) return bad
  if (b.deposit) {
    const refused = await checkDeposit(x, b, ctx)
    if (refused) return refused
  }
  return p
}

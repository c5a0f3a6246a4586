/**
 * The `exact` scheme on EVM: an EIP-3009 `transferWithAuthorization` signed by the payer for the
 * endpoint's price, verified locally (EIP-712 digest + native secp256k1 recovery; ERC-1271 /
 * ERC-6492 through RPC for smart wallets), reserved against the payer's cached balance minus its
 * unsettled exposure in one Redis round trip, and settled later in Multicall3 batches
 * (src/services/settlement/).
 */
import { SMART_WALLET_SIGNATURE } from '../../chain/recover-signer.js'
import type { SignerRecovery } from '../../chain/signer-recovery.js'
import { makeDomainSeparator, transferAuthDigest } from '../../chain/transfer-auth-digest.js'
import type { Deps } from '../../deps.js'
import { appError } from '../../errors.js'
import type { GuardResult, PayerCredit } from '../../ledger/payer-credit.js'
import { CallRefusal } from '../../proxy/paid-call/refusal.js'
import type { Challenge } from '../../x402/challenge.js'
import { decodeExactPayment, type PaymentEnvelope } from '../../x402/decode-payment.js'
import { minValidForSeconds, verifyRequirements } from '../../x402/verify-requirements.js'
import type { PaymentScheme, Reservation, VerifiedPayment, VerifyContext } from '../scheme.js'
import type { SmartWalletCheck } from '../smart-wallet-check.js'
import { createBalanceReader } from './balance-reader.js'

/** An exact payment after `verify`: the signature and, for a smart wallet, what its RPC check needs. */
interface ExactPayment extends VerifiedPayment {
  readonly smartWallet: { digest: Uint8Array; signature: `0x${string}` } | undefined
}

export function createExactScheme(
  deps: Deps,
  opts: { credit: PayerCredit; recovery: SignerRecovery; smartWallets: SmartWalletCheck },
): PaymentScheme {
  const { config } = deps
  const { credit, recovery, smartWallets } = opts
  const domainSeparator = makeDomainSeparator({
    name: config.chain.usdc.name,
    version: config.chain.usdc.version,
    chainId: config.chain.chainId,
    verifyingContract: config.chain.usdc.address,
  })
  const balances = createBalanceReader(deps, credit)

  /** ERC-1271 (or ERC-6492) through RPC; undefined when valid, else the refusal */
  async function checkSmartWallet(p: ExactPayment, ctx: VerifyContext): Promise<CallRefusal | undefined> {
    const { digest, signature } = p.smartWallet!
    const check = await smartWallets(p.payer, digest, signature, ctx.log)
    if (check instanceof CallRefusal) return check
    if (check === 'valid') return undefined
    if (check === 'undeployed') return CallRefusal.payment('invalid_exact_evm_payload_undeployed_smart_wallet')
    if (check === 'counterfactual') {
      return CallRefusal.payment(
        'invalid_exact_evm_payload_undeployed_smart_wallet',
        'this platform does not accept ERC-6492 signatures of wallets not deployed yet; deploy the wallet first',
      )
    }
    return CallRefusal.payment('invalid_exact_evm_payload_signature')
  }

  /** One guard round trip, with the cold-cache and stale-balance second tries. */
  async function guard(p: ExactPayment, nowMs: number): Promise<{ result: GuardResult; stale: boolean }> {
    const args = { payer: p.payer, asset: p.asset, nonce: p.nonce, value: p.value, validBefore: p.validBefore, nowMs }
    let g = await credit.reserve(args)
    if (g.result === 'unknown_balance') {
      await credit.warm(p.asset, p.payer, balances.readOne)
      g = await credit.reserve(args)
    } else if (g.result === 'insufficient' && g.stale) {
      // funded since the balance was cached (a top-up)? one read, at most every 30 s per payer
      await credit.readBalances(p.asset, [p.payer], balances.readOne)
      g = await credit.reserve(args)
    }
    return g
  }

  function reservation(p: ExactPayment, settleFirst: boolean): Reservation {
    let recorded = false
    let released = false
    return {
      settleFirst,
      recorded: () => {
        recorded = true
      },
      async release() {
        if (released) return
        released = true
        const back = [credit.release({ payer: p.payer, asset: p.asset, value: p.value })]
        if (!recorded) back.push(credit.forgetNonce(p.payer, p.nonce))
        await Promise.allSettled(back)
      },
    }
  }

  return {
    name: 'exact',

    async verify(envelope: PaymentEnvelope, challenge: Challenge, ctx: VerifyContext) {
      const payment = decodeExactPayment(envelope)
      if (!payment.ok) return CallRefusal.fromX402(payment)
      const checked = verifyRequirements(payment, challenge, Math.floor(ctx.nowMs / 1000), {
        maxValidForSeconds: config.x402.maxValidForSeconds,
        // long enough to be settled after the call: a payment that expires first would be served for nothing
        minValidForSeconds: minValidForSeconds(ctx.callMs / 1000),
      })
      if (!checked.ok) return CallRefusal.fromX402(checked)
      const auth = checked.authorization
      const digest = transferAuthDigest(domainSeparator, auth)
      const signer = await recovery.recover(digest, checked.signature)
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
    },

    async reserve(payment: VerifiedPayment, ctx: VerifyContext) {
      const p = payment as ExactPayment
      let g
      try {
        g = await guard(p, ctx.nowMs)
      } catch (err) {
        ctx.log.error({ err: (err as Error).message }, 'payment guard unavailable')
        return CallRefusal.error(appError('payment_not_recorded'))
      }
      switch (g.result) {
        case 'nonce_used':
          return CallRefusal.payment('invalid_exact_evm_nonce_already_used')
        case 'insufficient':
        case 'unknown_balance':
          return CallRefusal.payment('invalid_exact_evm_insufficient_balance')
      }
      // 'blocked' is reserved like 'ok': the payment is settled before it is served
      const held = reservation(p, g.result === 'blocked')
      if (g.stale) balances.refreshInBackground(p.asset, p.payer, ctx.log)
      if (p.smartWallet) {
        const refused = await checkSmartWallet(p, ctx)
        if (refused) {
          await held.release()
          return refused
        }
      }
      return held
    },
  }
}

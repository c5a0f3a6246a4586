/**
 * `reserve` of the `exact` scheme: the payment against the payer's cached balance minus its
 * unsettled exposure, with the nonce as replay guard, in one Redis round trip (a second one for a
 * cold cache or a stale balance, ./credit-guard.ts), then a smart wallet's ERC-1271 (or ERC-6492)
 * answer through RPC.
 */
import { appError } from '../../errors.js'
import { CallRefusal } from '../../seam/types.js'
import type { Reservation, VerifyContext } from '../scheme.js'
import type { ExactContext, ExactPayment } from './context.js'
import { guardAgain, wantsSecondTry } from './credit-guard.js'

/** ERC-1271 (or ERC-6492) through RPC; undefined when valid, else the refusal */
async function checkSmartWallet(
  x: ExactContext,
  p: ExactPayment,
  ctx: VerifyContext,
): Promise<CallRefusal | undefined> {
  const { digest, signature } = p.smartWallet!
  const check = await x.smartWallets(p.payer, digest, signature, ctx.log)
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

function reservation(x: ExactContext, p: ExactPayment, settleFirst: boolean): Reservation {
  const { credit } = x
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

export async function reserveExact(
  x: ExactContext,
  p: ExactPayment,
  ctx: VerifyContext,
): Promise<Reservation | CallRefusal> {
  const { credit } = x
  let g
  try {
    // one guard round trip, with the cold-cache and stale-balance second tries
    const args = {
      payer: p.payer,
      asset: p.asset,
      nonce: p.nonce,
      value: p.value,
      validBefore: p.validBefore,
      nowMs: ctx.nowMs,
    }
    g = await credit.reserve(args)
    if (wantsSecondTry(g)) g = await guardAgain(credit, x.balances.readOne, args, g)
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
  const held = reservation(x, p, g.result === 'blocked')
  if (g.stale) x.balances.refreshInBackground(p.asset, p.payer, ctx.log)
  if (p.smartWallet) {
    const refused = await checkSmartWallet(x, p, ctx)
    if (refused) {
      await held.release()
      return refused
    }
  }
  return held
}

/**
 * `reserve` of the `upto` scheme: the payer's Permit2 allowance (cached per process), the maximum
 * against the payer's cached balance (the exact scheme's credit, one Redis round trip, with the
 * Permit2 nonce as replay guard), then, for a smart wallet, its ERC-1271 (or ERC-6492) answer
 * through RPC; the hold's `charged(value)` gives the difference back.
 */
import type { Address } from 'viem'
import { PERMIT2_ADDRESS } from '../../chain/permit2.js'
import { appError } from '../../errors.js'
import { CallRefusal } from '../../seam/types.js'
import type { Reservation, VerifyContext } from '../scheme.js'
import { guardAgain, wantsSecondTry } from '../exact/credit-guard.js'
import { fail, retryShortly, type UptoContext, type UptoPayment } from './context.js'

const ALLOWANCE_ABI = [
  {
    type: 'function',
    name: 'allowance',
    stateMutability: 'view',
    inputs: [
      { name: 'owner', type: 'address' },
      { name: 'spender', type: 'address' },
    ],
    outputs: [{ type: 'uint256' }],
  },
] as const

/**
 * The payer's Permit2 allowance, for a payment of `amount`. A read is trusted for
 * UPTO_ALLOWANCE_CACHE_MS and for UPTO_ALLOWANCE_EXPOSURE of maxima reserved on it: a buyer that
 * revokes its allowance is served at most that much (and that long) on the old value here.
 */
async function allowance(x: UptoContext, payer: Address, amount: bigint, fresh: boolean): Promise<bigint> {
  const { config } = x
  const hit = x.allowances.get(payer)
  if (
    !fresh &&
    hit &&
    Date.now() - hit.at < config.upto.allowanceCacheMs &&
    hit.used + amount <= config.upto.allowanceExposure
  ) {
    hit.used += amount
    return hit.value
  }
  const value = await x.chain.readContract({
    address: config.chain.usdc.address,
    abi: ALLOWANCE_ABI,
    functionName: 'allowance',
    args: [payer, PERMIT2_ADDRESS],
  })
  if (x.allowances.size > 100_000) x.allowances.clear()
  x.allowances.set(payer, { value, at: Date.now(), used: amount })
  return value
}

function reservation(x: UptoContext, p: UptoPayment, settleFirst: boolean): Reservation {
  const { credit } = x
  let recorded = false
  let released = false
  let kept = p.value
  return {
    settleFirst,
    recorded: () => {
      recorded = true
    },
    async charged(value: bigint) {
      if (released || value >= kept) return
      const back = kept - value
      kept = value
      await credit.release({ payer: p.payer, asset: p.asset, value: back }).catch(() => {})
    },
    async release() {
      if (released) return
      released = true
      const back = [credit.release({ payer: p.payer, asset: p.asset, value: kept })]
      if (!recorded) back.push(credit.forgetNonce(p.payer, p.nonce))
      await Promise.allSettled(back)
    },
  }
}

/** ERC-1271 (or ERC-6492) through RPC; undefined when valid, else the refusal */
async function checkSmartWallet(x: UptoContext, p: UptoPayment, ctx: VerifyContext): Promise<CallRefusal | undefined> {
  const { digest, signature } = p.smartWallet!
  const check = await x.smartWallets(p.payer, digest, signature, ctx.log)
  if (check instanceof CallRefusal) return check
  switch (check) {
    case 'valid':
      return undefined
    case 'invalid':
      return fail('invalid_permit2_signature', 'the wallet contract at permit2Authorization.from does not accept it')
    case 'undeployed':
      return fail(
        'invalid_permit2_signature',
        'a smart wallet signature, but there is no contract at permit2Authorization.from; deploy the wallet first',
      )
    case 'counterfactual':
      return fail(
        'invalid_permit2_signature',
        'this platform does not accept ERC-6492 signatures of wallets not deployed yet; deploy the wallet first',
      )
  }
}

export async function reserveUpto(
  x: UptoContext,
  p: UptoPayment,
  ctx: VerifyContext,
): Promise<Reservation | CallRefusal> {
  const { credit } = x
  try {
    let allowed = await allowance(x, p.payer, p.value, false)
    if (allowed < p.value) allowed = await allowance(x, p.payer, p.value, true)
    if (allowed < p.value)
      return fail('permit2_allowance_required', `Permit2 may move ${allowed}, the maximum is ${p.value}`)
  } catch (err) {
    ctx.log.warn({ err: (err as Error).message }, 'permit2 allowance read failed')
    return retryShortly('the Permit2 allowance could not be read now; retry shortly')
  }
  const args = {
    payer: p.payer,
    asset: p.asset,
    nonce: p.nonce,
    value: p.value,
    validBefore: p.validBefore,
    nowMs: ctx.nowMs,
  }
  let g
  try {
    g = await credit.reserve(args)
    if (wantsSecondTry(g)) g = await guardAgain(credit, x.balances.readOne, args, g)
  } catch (err) {
    ctx.log.error({ err: (err as Error).message }, 'payment guard unavailable')
    return CallRefusal.error(appError('payment_not_recorded'))
  }
  switch (g.result) {
    case 'nonce_used':
      return fail('permit2_invalid_nonce')
    case 'insufficient':
    case 'unknown_balance':
      return fail('permit2_insufficient_balance')
  }
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

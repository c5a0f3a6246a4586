/**
 * The `upto` scheme on EVM (coinbase/x402 `specs/schemes/upto/scheme_upto_evm.md`, as `@x402/evm`
 * implements it): the buyer signs a Permit2 `PermitWitnessTransferFrom` for the endpoint's maximum
 * price, spender the x402 upto proxy, with a witness naming the recipient (`to` = payTo), the
 * facilitator allowed to settle (one of our relayers, fixed per endpoint: `extra.facilitatorAddress`)
 * and `validAfter`.
 * The call's actual charge (≤ the maximum) is known once it answered (src/proxy/paid-call/charge.ts)
 * and only that is settled, through the proxy, in the exact scheme's Multicall3 batches.
 *
 * - verify: the payload's shape, the requirement match (scheme, network, amount = maximum, payTo,
 *   asset), spender, witness, token, deadline and the signature (EIP-712 digest + native recovery;
 *   a signature longer than 65 bytes is a smart wallet's, checked in reserve);
 * - reserve: the maximum against the payer's cached balance (the exact scheme's credit, one Redis
 *   round trip, with the Permit2 nonce as replay guard) and the payer's Permit2 allowance (cached
 *   per process for UPTO_ALLOWANCE_CACHE_MS), then, for a smart wallet, its ERC-1271 (or ERC-6492) answer through RPC, as exact
 *   asks it (the check Permit2 makes on-chain when the owner has code); `charged(value)` gives the
 *   difference back.
 */
import { getAddress, hashTypedData, hexToBytes, type Address, type Hex } from 'viem'
import { PERMIT2_ADDRESS, UPTO_PROXY_ADDRESS } from '../../chain/permit2.js'
import { SMART_WALLET_SIGNATURE } from '../../chain/recover-signer.js'
import type { SignerRecovery } from '../../chain/signer-recovery.js'
import type { Deps } from '../../deps.js'
import { appError } from '../../errors.js'
import type { PayerCredit } from '../../ledger/payer-credit.js'
import type { SchemeOffer } from '../../proxy/endpoint-table.js'
import { CallRefusal } from '../../proxy/paid-call/refusal.js'
import type { Challenge } from '../../x402/challenge.js'
import type { PaymentEnvelope } from '../../x402/decode-payment.js'
import { refuse, type Refusal } from '../../x402/reasons.js'
import { minValidForSeconds } from '../../x402/verify-requirements.js'
import type { NetworkV2, PaymentRequirementsV2 } from '../../x402/types.js'
import { createBalanceReader } from '../exact/balance-reader.js'
import type { PaymentScheme, Reservation, VerifiedPayment, VerifyContext } from '../scheme.js'
import type { SmartWalletCheck } from '../smart-wallet-check.js'
import { facilitatorFor } from './facilitator.js'
import { UPTO_WITNESS_TYPES, uptoNonceHex } from './typed-data.js'

export { UPTO_WITNESS_TYPES, uptoNonceHex } from './typed-data.js'

/** The Permit2 authorization of an upto payload, addresses lower-case, integers as bigint. */
export interface UptoAuthorization {
  from: Address
  token: Address
  amount: bigint
  spender: Address
  nonce: bigint
  deadline: bigint
  to: Address
  facilitator: Address
  validAfter: bigint
}

/** The digest Permit2 checks the signature against. */
export function uptoDigest(a: UptoAuthorization, chainId: number): Hex {
  return hashTypedData({
    domain: { name: 'Permit2', chainId, verifyingContract: PERMIT2_ADDRESS },
    types: UPTO_WITNESS_TYPES,
    primaryType: 'PermitWitnessTransferFrom',
    message: {
      permitted: { token: a.token, amount: a.amount },
      spender: a.spender,
      nonce: a.nonce,
      deadline: a.deadline,
      witness: { to: a.to, facilitator: a.facilitator, validAfter: a.validAfter },
    },
  })
}

type Obj = Record<string, unknown>
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v)
const ADDRESS = /^0x[0-9a-fA-F]{40}$/
const UINT = /^(0|[1-9][0-9]{0,77})$/
// 64 or 65 bytes for a key; longer for a smart wallet (the header size cap bounds it)
const SIGNATURE = /^0x([0-9a-fA-F]{2}){64,}$/
const U256_MAX = (1n << 256n) - 1n

class FieldError extends Error {}
function addr(o: Obj, k: string, path: string): Address {
  const v = o[k]
  if (typeof v !== 'string' || !ADDRESS.test(v))
    throw new FieldError(`${path}.${k} must be a 0x-prefixed 20-byte address`)
  return v.toLowerCase() as Address
}
function uint(o: Obj, k: string, path: string): bigint {
  const v = o[k]
  const n = typeof v === 'string' && UINT.test(v) ? BigInt(v) : undefined
  if (n === undefined || n > U256_MAX) throw new FieldError(`${path}.${k} must be a uint256 as a decimal string`)
  return n
}
function obj(o: Obj, k: string, path: string): Obj {
  const v = o[k]
  if (!isObj(v)) throw new FieldError(`${path}.${k} must be an object`)
  return v
}

/** Reads an upto payload `{signature, permit2Authorization}`, or refuses `invalid_payload` naming the field. */
export function decodeUptoPayload(
  payload: unknown,
): { ok: true; signature: Hex; authorization: UptoAuthorization } | Refusal {
  try {
    if (!isObj(payload)) throw new FieldError('payload must be an object')
    const sig = payload.signature
    if (typeof sig !== 'string' || !SIGNATURE.test(sig))
      throw new FieldError('payload.signature must be a 0x-prefixed hex signature of at least 64 bytes')
    const a = obj(payload, 'permit2Authorization', 'payload')
    const p = 'payload.permit2Authorization'
    const permitted = obj(a, 'permitted', p)
    const witness = obj(a, 'witness', p)
    return {
      ok: true,
      signature: sig.toLowerCase() as Hex,
      authorization: {
        from: addr(a, 'from', p),
        token: addr(permitted, 'token', `${p}.permitted`),
        amount: uint(permitted, 'amount', `${p}.permitted`),
        spender: addr(a, 'spender', p),
        nonce: uint(a, 'nonce', p),
        deadline: uint(a, 'deadline', p),
        to: addr(witness, 'to', `${p}.witness`),
        facilitator: addr(witness, 'facilitator', `${p}.witness`),
        validAfter: uint(witness, 'validAfter', `${p}.witness`),
      },
    }
  } catch (e) {
    if (e instanceof FieldError) return refuse('invalid_payload', e.message)
    throw e
  }
}

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

const retryShortly = (detail: string) =>
  CallRefusal.error(appError('service_unavailable', { detail }, { headers: { 'retry-after': '1' } }))

interface UptoPayment extends VerifiedPayment {
  readonly authorization: UptoAuthorization
  /** for a smart wallet, what its RPC check needs */
  readonly smartWallet: { digest: Uint8Array; signature: Hex } | undefined
}

export interface UptoScheme extends PaymentScheme {
  /** the relayers that may be named as facilitator, lower case */
  readonly facilitators: readonly Address[]
}

export function createUptoScheme(
  deps: Deps,
  opts: {
    credit: PayerCredit
    recovery: SignerRecovery
    smartWallets: SmartWalletCheck
    /** our relayers (RELAYER_PRIVATE_KEYS): each endpoint names one as its payments' facilitator */
    facilitators: readonly Address[]
  },
): UptoScheme {
  const { config } = deps
  const { credit, recovery, smartWallets } = opts
  if (opts.facilitators.length === 0) throw new Error('upto: at least one relayer is needed as facilitator')
  const facilitators = opts.facilitators.map((f) => f.toLowerCase() as Address)
  const ours = new Set<string>(facilitators)
  const balances = createBalanceReader(deps, credit)
  /** payer → Permit2 allowance of the configured USDC, when it was read, and the maxima reserved on it since */
  const allowances = new Map<string, { value: bigint; at: number; used: bigint }>()

  /**
   * The payer's Permit2 allowance, for a payment of `amount`. A read is trusted for
   * UPTO_ALLOWANCE_CACHE_MS and for UPTO_ALLOWANCE_EXPOSURE of maxima reserved on it: a buyer that
   * revokes its allowance is served at most that much (and that long) on the old value here.
   */
  async function allowance(payer: Address, amount: bigint, fresh: boolean): Promise<bigint> {
    const hit = allowances.get(payer)
    if (
      !fresh &&
      hit &&
      Date.now() - hit.at < config.upto.allowanceCacheMs &&
      hit.used + amount <= config.upto.allowanceExposure
    ) {
      hit.used += amount
      return hit.value
    }
    const value = await deps.chain.readContract({
      address: config.chain.usdc.address,
      abi: ALLOWANCE_ABI,
      functionName: 'allowance',
      args: [payer, PERMIT2_ADDRESS],
    })
    if (allowances.size > 100_000) allowances.clear()
    allowances.set(payer, { value, at: Date.now(), used: amount })
    return value
  }

  function reservation(p: UptoPayment, settleFirst: boolean): Reservation {
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

  const fail = (reason: Parameters<typeof refuse>[0], detail?: string) => CallRefusal.fromX402(refuse(reason, detail))

  /** ERC-1271 (or ERC-6492) through RPC; undefined when valid, else the refusal */
  async function checkSmartWallet(p: UptoPayment, ctx: VerifyContext): Promise<CallRefusal | undefined> {
    const { digest, signature } = p.smartWallet!
    const check = await smartWallets(p.payer, digest, signature, ctx.log)
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

  return {
    name: 'upto',
    facilitators,

    /** The endpoint's v2 requirement: its price is the maximum; its facilitator one of our relayers (`facilitatorFor`). */
    requirement(offer: SchemeOffer): PaymentRequirementsV2 {
      return {
        scheme: 'upto',
        network: config.chain.caip2 as NetworkV2,
        amount: offer.amount.toString(),
        asset: getAddress(config.chain.usdc.address),
        payTo: getAddress(offer.payTo),
        maxTimeoutSeconds: offer.maxTimeoutSeconds,
        extra: {
          name: config.chain.usdc.name,
          version: config.chain.usdc.version,
          assetTransferMethod: 'permit2',
          facilitatorAddress: getAddress(facilitatorFor(offer.resourceUrl, facilitators)),
        },
      }
    },

    async verify(envelope: PaymentEnvelope, challenge: Challenge, ctx: VerifyContext) {
      if (envelope.version !== 2)
        return fail('invalid_x402_version', 'the upto scheme is offered in x402 v2 only: send PAYMENT-SIGNATURE')
      const decoded = decodeUptoPayload(envelope.payload)
      if (!decoded.ok) return CallRefusal.fromX402(decoded)
      const a = decoded.authorization
      const t = challenge.terms
      if (envelope.network !== t.networkV2)
        return fail('invalid_network', `expected ${t.networkV2}, got ${envelope.network}`)
      const acc = envelope.accepted
      if (
        acc.amount !== t.amount.toString() ||
        acc.payTo.toLowerCase() !== t.payTo ||
        acc.asset.toLowerCase() !== t.asset
      )
        return fail(
          'accepted_requirements_mismatch',
          'accepted must be the upto requirement of this endpoint (amount, payTo, asset)',
        )
      if (a.spender !== UPTO_PROXY_ADDRESS.toLowerCase())
        return fail('invalid_permit2_spender', `got ${getAddress(a.spender)}`)
      if (a.to !== t.payTo) return fail('invalid_permit2_recipient_mismatch', `expected ${getAddress(t.payTo)}`)
      // any of our relayers settles what names it (the challenge's choice may have moved with RELAYER_PRIVATE_KEYS)
      if (!ours.has(a.facilitator))
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
      if (a.deadline > now + BigInt(config.x402.maxValidForSeconds))
        return fail(
          'authorization_window_too_long',
          `the deadline is more than ${config.x402.maxValidForSeconds} s ahead`,
        )
      const digest = hexToBytes(uptoDigest(a, t.chainId))
      const signer = await recovery.recover(digest, decoded.signature)
      // a smart wallet's signature needs RPC: checked after the reservation, so that a payment
      // without allowance or funds (or replayed) costs no wallet call
      const smartWallet = signer === SMART_WALLET_SIGNATURE
      if (!smartWallet && signer?.toLowerCase() !== a.from) return fail('invalid_permit2_signature')
      const nonce = uptoNonceHex(a.nonce)
      const p: UptoPayment = {
        scheme: 'upto',
        version: 2,
        payer: a.from,
        asset: a.token,
        value: a.amount,
        nonce,
        validBefore: Number(a.deadline),
        usageBased: true,
        authorization: a,
        smartWallet: smartWallet ? { digest, signature: decoded.signature } : undefined,
        ledgerFields: {
          scheme: 'upto',
          x402_version: 2,
          network: config.chain.caip2,
          asset: a.token,
          payer: a.from,
          pay_to: a.to,
          value: a.amount,
          max_value: a.amount,
          facilitator: a.facilitator,
          valid_after: a.validAfter,
          valid_before: a.deadline,
          nonce,
          signature: decoded.signature,
        },
      }
      return p
    },

    async reserve(payment: VerifiedPayment, ctx: VerifyContext) {
      const p = payment as UptoPayment
      try {
        let allowed = await allowance(p.payer, p.value, false)
        if (allowed < p.value) allowed = await allowance(p.payer, p.value, true)
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
        if (g.result === 'unknown_balance') {
          await credit.warm(p.asset, p.payer, balances.readOne)
          g = await credit.reserve(args)
        } else if (g.result === 'insufficient' && g.stale) {
          await credit.readBalances(p.asset, [p.payer], balances.readOne)
          g = await credit.reserve(args)
        }
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

/**
 * Facilitator mode, `exact` on EVM (EIP-3009 `transferWithAuthorization` of the platform's USDC):
 * what `POST /facilitator/verify` and `/settle` do for a seller whose own server (the official
 * middleware) takes the payment.
 *
 * - verify (here): the requirements are this platform's network and token; the payment matches
 *   them (verifyRequirements, as the proxy checks a call's: scheme, network, asset, payTo, amount,
 *   validity window); the signature is the payer's (local recovery, ERC-1271 through RPC for a
 *   smart wallet); the nonce is unused and the payer holds the amount (both read from the chain,
 *   fresh: no cache in facilitator mode).
 * - settle (./exact-settle.ts): the same checks, then one transfer from a relayer, its receipt
 *   awaited, idempotent per authorization.
 */
import { getAddress, type Address, type Hex, type PublicClient } from 'viem'
import type { FastifyBaseLogger } from 'fastify'
import type { Kysely } from 'kysely'
import type { Config } from '../../config.js'
import type { Database } from '../../db/database.js'
import { SMART_WALLET_SIGNATURE } from '../../chain/recover-signer.js'
import type { SignerRecovery } from '../../chain/signer-recovery.js'
import { makeDomainSeparator, transferAuthDigest } from '../../chain/transfer-auth-digest.js'
import { usdcAbi } from '../../chain/usdc-abi.js'
import type { createRelayerLock, Relayer } from '../../chain/relayer.js'
import type { SmartWalletCheck } from '../../schemes/smart-wallet-check.js'
import { CallRefusal } from '../../seam/types.js'
import { decodeExactPayment, type DecodedPayment } from '../../x402/decode-payment.js'
import { refuse, type ReasonCode, type Refusal } from '../../x402/reasons.js'
import { verifyRequirements } from '../../x402/verify-requirements.js'
import type { HexString, NormalizedAuthorization } from '../../x402/types.js'
import { termsOf, type FacilitatorCall } from './request.js'

export interface VerifyAnswer {
  isValid: boolean
  invalidReason?: string
  invalidMessage?: string
  payer?: string
}

export interface ExactFacilitatorDeps {
  config: Readonly<Config>
  db: Kysely<Database>
  chain: PublicClient
  recovery: SignerRecovery
  smartWallets: SmartWalletCheck
  relayers: readonly Relayer[]
  lock: ReturnType<typeof createRelayerLock>
  log: FastifyBaseLogger
}

/** The deps with what every check uses, computed once. */
export interface ExactContext extends ExactFacilitatorDeps {
  domainSeparator: Uint8Array
  /** the platform's USDC, lower-case */
  usdc: Address
}

/** A payment that passed the checks without chain state: what settle sends. */
export interface CheckedPayment {
  auth: NormalizedAuthorization
  signature: HexString
  asset: Address
}

/** A facilitator call whose payload reads as an `exact` one. */
export interface ExactCall extends FacilitatorCall {
  decoded: DecodedPayment
}

const invalid = (r: { reason: ReasonCode; message: string }, payer?: string): VerifyAnswer => ({
  isValid: false,
  invalidReason: r.reason,
  invalidMessage: r.message,
  ...(payer ? { payer } : {}),
})

/**
 * The call's payload as `exact`'s (signature and EIP-3009 authorization), or the refusal of a
 * malformed one (the caller's mistake: 400).
 */
export function readExactCall(call: FacilitatorCall): ExactCall | Refusal {
  const decoded = decodeExactPayment(call.envelope)
  return decoded.ok ? { ...call, decoded } : decoded
}

/** the requirement is for this platform's chain and token */
function wrongRequirement(x: ExactContext, call: ExactCall): Refusal | undefined {
  const r = call.requirements
  const caip2 = x.config.chain.caip2
  if (r.network !== caip2) return refuse('invalid_network', `this facilitator settles on ${caip2}`)
  if (r.asset.toLowerCase() !== x.usdc)
    return refuse('asset_mismatch', `this facilitator settles ${getAddress(x.usdc)} (USDC)`)
  return undefined
}

/** the smart wallet's answer for a signature that does not recover locally; undefined when valid */
async function smartWalletRefusal(
  x: ExactContext,
  auth: NormalizedAuthorization,
  digest: Uint8Array,
  signature: HexString,
): Promise<Refusal | undefined> {
  const check = await x.smartWallets(auth.from, digest, signature, x.log)
  if (check instanceof CallRefusal)
    return refuse('unexpected_verify_error', 'the smart wallet could not be asked now; retry shortly')
  if (check === 'undeployed' || check === 'counterfactual')
    return refuse('invalid_exact_evm_payload_undeployed_smart_wallet')
  return check === 'valid' ? undefined : refuse('invalid_exact_evm_payload_signature')
}

/** the checks without chain state: requirements, window, signature; the refusal or the payment */
export async function checkPayment(x: ExactContext, call: ExactCall, nowMs: number): Promise<CheckedPayment | Refusal> {
  const wrong = wrongRequirement(x, call)
  if (wrong) return wrong
  const challenge = { terms: termsOf(call.requirements, x.config), requirementsV2: call.requirements }
  const checked = verifyRequirements(call.decoded, challenge, Math.floor(nowMs / 1000))
  if (!checked.ok) return checked
  const auth = checked.authorization
  const digest = transferAuthDigest(x.domainSeparator, auth)
  const signer = await x.recovery.recover(digest, checked.signature)
  if (signer === SMART_WALLET_SIGNATURE) {
    const refused = await smartWalletRefusal(x, auth, digest, checked.signature)
    if (refused) return refused
  } else if (signer === null || signer !== auth.from) {
    return refuse('invalid_exact_evm_payload_signature')
  }
  return { auth, signature: checked.signature, asset: x.usdc }
}

/** nonce unused and balance enough, read from the chain now */
export async function checkChainState(x: ExactContext, p: CheckedPayment): Promise<Refusal | undefined> {
  const from = getAddress(p.auth.from)
  const [used, balance] = await Promise.all([
    x.chain.readContract({
      address: p.asset,
      abi: usdcAbi,
      functionName: 'authorizationState',
      args: [from, p.auth.nonce as Hex],
    }),
    x.chain.readContract({ address: p.asset, abi: usdcAbi, functionName: 'balanceOf', args: [from] }),
  ])
  if (used) return refuse('invalid_exact_evm_nonce_already_used')
  if (balance < p.auth.value) return refuse('invalid_exact_evm_insufficient_balance')
  return undefined
}

/** `POST /facilitator/verify` of an exact payment. */
export async function verifyExact(x: ExactContext, call: ExactCall, nowMs: number): Promise<VerifyAnswer> {
  const p = await checkPayment(x, call, nowMs)
  if ('ok' in p) return invalid(p)
  const payer = getAddress(p.auth.from)
  let state
  try {
    state = await checkChainState(x, p)
  } catch (err) {
    x.log.warn({ err: (err as Error).message }, 'facilitator chain read failed')
    return invalid(refuse('unexpected_verify_error', 'the chain could not be read now; retry shortly'), payer)
  }
  return state ? invalid(state, payer) : { isValid: true, payer }
}

/** The context of the exact checks: the deps and the token's EIP-712 domain, computed once. */
export function exactContext(d: ExactFacilitatorDeps): ExactContext {
  const { chain } = d.config
  return {
    ...d,
    domainSeparator: makeDomainSeparator({
      name: chain.usdc.name,
      version: chain.usdc.version,
      chainId: chain.chainId,
      verifyingContract: chain.usdc.address,
    }),
    usdc: chain.usdc.address.toLowerCase() as Address,
  }
}

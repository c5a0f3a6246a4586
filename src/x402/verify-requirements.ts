/**
 * Check a decoded payment against what the endpoint asks for, at time `now`: the same checks
 * as the official exact-EVM facilitator (scheme, network, recipient, value, validAfter,
 * validBefore >= now + 6 s), plus the v2 rule that `accepted` is one of the requirements we
 * issued, plus bounds on how long the authorization stays valid: long enough to be settled after
 * the call (`minValidForSeconds`: the facilitator settles at once, we settle after the call, in a
 * batch), and not so long that the replay guard and settlement cannot cover the whole window.
 * Pure: no clock, no I/O, no signature recovery.
 */
import type { DecodedPayment } from './decode-payment.js'
import type { Challenge } from './challenge.js'
import { refuse, type Refusal } from './reasons.js'
import type { HexString, NormalizedAuthorization } from './types.js'

/** Seconds `validBefore` must be ahead of now, as the official facilitator (block time). */
export const VALID_BEFORE_MARGIN_SECONDS = 6

/** Settlement submits no authorization that expires within this many seconds (the settler's default margin). */
export const SETTLEMENT_EXPIRY_MARGIN_SECONDS = 15

/** Seconds between a call's end and its batch being sent, with room for a busy tick. */
export const SETTLEMENT_PICKUP_SECONDS = 15

/**
 * The least validity a payment for a call that may run `callSeconds` needs: the call, then the
 * batch pickup, then the settler's margin. With less it could never be settled, and the buyer
 * would be served for nothing. The official clients sign `maxTimeoutSeconds` (300 s here), far more.
 */
export function minValidForSeconds(callSeconds: number): number {
  return Math.max(
    VALID_BEFORE_MARGIN_SECONDS,
    Math.ceil(callSeconds) + SETTLEMENT_PICKUP_SECONDS + SETTLEMENT_EXPIRY_MARGIN_SECONDS,
  )
}

/** Extra seconds of validity tolerated beyond `maxTimeoutSeconds` (client clock ahead of ours). */
export const DEFAULT_VALIDITY_SLACK_SECONDS = 120

export interface VerifyRequirementsOptions {
  /** longest accepted `validBefore - now`; default `maxTimeoutSeconds + 120` */
  maxValidForSeconds?: number
  /** shortest accepted `validBefore - now` (minValidForSeconds of the endpoint's time limit); default 6 s */
  minValidForSeconds?: number
}

export type VerifyRequirementsResult =
  { ok: true; version: 1 | 2; authorization: NormalizedAuthorization; signature: HexString } | Refusal

/**
 * @example
 *   const r = verifyRequirements(decoded, challenge, Math.floor(Date.now() / 1000))
 *   if (!r.ok) return refuseWith(challenge, r.reason)
 *   // then recover the signer and compare it with r.authorization.from
 */
export function verifyRequirements(
  decoded: DecodedPayment,
  challenge: Pick<Challenge, 'terms' | 'requirementsV2'>,
  now: number,
  options: VerifyRequirementsOptions = {},
): VerifyRequirementsResult {
  const { terms } = challenge
  const auth = decoded.payload.payload.authorization

  const refused = refuseVersionTerms(decoded, challenge)
  if (refused) return refused

  const to = auth.to.toLowerCase() as HexString
  if (to !== terms.payTo) return refuse('invalid_exact_evm_payload_recipient_mismatch')

  const value = BigInt(auth.value)
  if (decoded.version === 2 ? value !== terms.amount : value < terms.amount) {
    return refuse(
      'invalid_exact_evm_payload_authorization_value',
      `expected ${decoded.version === 2 ? '' : 'at least '}${terms.amount}`,
    )
  }

  const validAfter = BigInt(auth.validAfter)
  const validBefore = BigInt(auth.validBefore)
  const outside = refuseWindow(validAfter, validBefore, now, terms.maxTimeoutSeconds, options)
  if (outside) return outside

  return {
    ok: true,
    version: decoded.version,
    authorization: {
      from: auth.from.toLowerCase() as HexString,
      to,
      value,
      validAfter,
      validBefore,
      nonce: auth.nonce.toLowerCase() as HexString,
    },
    signature: decoded.payload.payload.signature,
  }
}

/**
 * The checks of the payload's own x402 version: v1 names its scheme and network in the payload;
 * v2 carries the requirement it `accepted`, which must be the one issued.
 */
function refuseVersionTerms(
  decoded: DecodedPayment,
  challenge: Pick<Challenge, 'terms' | 'requirementsV2'>,
): Refusal | undefined {
  const { terms } = challenge
  if (decoded.version === 1) {
    const p = decoded.payload
    if (p.x402Version !== 1) return refuse('invalid_x402_version')
    if (p.scheme !== 'exact') return refuse('unsupported_scheme', `got ${clip(p.scheme)}`)
    if (p.network !== terms.networkV1) return refuse('invalid_network', `expected ${terms.networkV1}`)
    return undefined
  }
  const p = decoded.payload
  const a = decoded.accepted
  if (p.x402Version !== 2) return refuse('invalid_x402_version')
  if (a.scheme !== 'exact') return refuse('unsupported_scheme', `got ${clip(a.scheme)}`)
  if (a.network !== terms.networkV2) return refuse('invalid_network', `expected ${terms.networkV2}`)
  if (a.asset.toLowerCase() !== terms.asset) return refuse('asset_mismatch')
  if (a.payTo.toLowerCase() !== terms.payTo)
    return refuse('invalid_exact_evm_payload_recipient_mismatch', 'accepted.payTo')
  if (a.amount !== challenge.requirementsV2.amount)
    return refuse('invalid_exact_evm_payload_authorization_value', 'accepted.amount')
  // the official server matches v2 payments by deep equality with an issued requirement
  if (!jsonEqual(a, challenge.requirementsV2)) return refuse('accepted_requirements_mismatch')
  return undefined
}

/** The authorization's validity window at `now`: already valid, and ending neither too soon nor too late. */
function refuseWindow(
  validAfter: bigint,
  validBefore: bigint,
  now: number,
  maxTimeoutSeconds: number,
  options: VerifyRequirementsOptions,
): Refusal | undefined {
  const nowN = BigInt(Math.floor(now))
  if (validAfter > nowN) return refuse('invalid_exact_evm_payload_authorization_valid_after')
  const minValidFor = Math.max(VALID_BEFORE_MARGIN_SECONDS, options.minValidForSeconds ?? 0)
  if (validBefore < nowN + BigInt(minValidFor)) {
    return refuse(
      'invalid_exact_evm_payload_authorization_valid_before',
      `validBefore must be at least ${minValidFor} s ahead for this endpoint`,
    )
  }
  const maxValidFor = options.maxValidForSeconds ?? maxTimeoutSeconds + DEFAULT_VALIDITY_SLACK_SECONDS
  if (validBefore > nowN + BigInt(maxValidFor)) {
    return refuse('authorization_window_too_long', `validBefore may be at most ${maxValidFor} s ahead`)
  }
  return undefined
}

/**
 * Deep equality of JSON values, key order ignored (as x402 core's `deepEqual`); `undefined`
 * members count as absent.
 */
export function jsonEqual(a: unknown, b: unknown, depth = 0): boolean {
  if (a === b) return true
  if (depth > 16 || typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false
  if (Array.isArray(a) !== Array.isArray(b)) return false
  if (Array.isArray(a)) {
    const bb = b as unknown[]
    if (a.length !== bb.length) return false
    for (let i = 0; i < a.length; i++) if (!jsonEqual(a[i], bb[i], depth + 1)) return false
    return true
  }
  const ao = a as Record<string, unknown>
  const bo = b as Record<string, unknown>
  const ak = Object.keys(ao).filter((k) => ao[k] !== undefined)
  const bk = Object.keys(bo).filter((k) => bo[k] !== undefined)
  if (ak.length !== bk.length) return false
  for (const k of ak) {
    if (!Object.hasOwn(bo, k) || !jsonEqual(ao[k], bo[k], depth + 1)) return false
  }
  return true
}

function clip(s: string): string {
  return JSON.stringify(s.length > 40 ? `${s.slice(0, 40)}…` : s)
}

import type { FastifyBaseLogger } from 'fastify'
import type { RedisClient } from '../../redis-client.js'
import { keccak256 } from '../../chain/keccak.js'
import { recoverAuthorizer, SMART_WALLET_SIGNATURE } from '../../chain/recover-signer.js'
import type { AccessGrantStore } from '../../db/access-grant-store.js'
import type { AccessUseWriter } from '../../ledger/access-use-writer.js'
import { appError } from '../../errors.js'
import { refuse, type ReasonCode } from '../../x402/reasons.js'
import {
  addressChecksumHolds,
  checkSignInFields,
  parseSignInHeader,
  SIGN_IN_MAX_AGE_MS,
  signInMessage,
  type SignInPayload,
} from '../../x402/sign-in-with-x.js'
import type { ResolvedCall } from './call.js'
import type { SmartWalletCheck } from '../../schemes/smart-wallet-check.js'
import { CallRefusal } from './refusal.js'

export interface SignInDeps {
  grants: AccessGrantStore
  /** records each call served on a sign-in (the buyer's and the seller's history); absent: only counted */
  uses?: AccessUseWriter
  redis: RedisClient
  key(...parts: string[]): string
  /**
   * asks smart wallets (ERC-1271, ERC-6492 where the deployment accepts it) about signatures longer
   * than 65 bytes: the proxy's one bounded checker, shared with the payment schemes
   */
  smartWallets: SmartWalletCheck
}

/** Who signed in, and the payment whose grant covers the call. */
export interface SignedIn {
  payer: string
  grantPaymentId: string
}

const HEX_SIG_RE = /^0x(?:[0-9a-fA-F]{2})+$/
const retryShortly = (detail: string) =>
  CallRefusal.error(appError('service_unavailable', { detail }, { headers: { 'retry-after': '1' } }))
const refused = (reason: ReasonCode, detail?: string) => CallRefusal.fromX402(refuse(reason, detail))

/**
 * The x402 `sign-in-with-x` stage, instead of a payment on an endpoint with paid access: the
 * SIGN-IN-WITH-X proof checked as the official server checks it (fields, then the signature), its
 * nonce taken once, then the wallet's access grant. Every refusal is an extension reason (402 with
 * a fresh challenge): nothing is reserved or charged either way.
 *
 * Order: the header and its fields (no I/O), the signature (native recovery; an RPC call only for
 * a smart wallet's long signature), the nonce (one Redis SET NX, kept as long as a message can stay
 * fresh), then the grant (one Redis read; Postgres only when Redis lost it), so forged or stale
 * proofs cost no round trip.
 */
export function createSignInStage(d: SignInDeps) {
  async function signatureHolds(p: SignInPayload, log: FastifyBaseLogger): Promise<CallRefusal | undefined> {
    if (!HEX_SIG_RE.test(p.signature)) return refused('invalid_siwx_malformed_signature')
    if (!addressChecksumHolds(p.address)) return refused('invalid_siwx_signature', 'the address checksum is wrong')
    const message = Buffer.from(signInMessage(p))
    // EIP-191 personal message: "\x19Ethereum Signed Message:\n" + length + message
    const digest = keccak256(Buffer.concat([Buffer.from(`\x19Ethereum Signed Message:\n${message.length}`), message]))
    const recovered = recoverAuthorizer(digest, p.signature)
    if (recovered === SMART_WALLET_SIGNATURE) {
      const check = await d.smartWallets(p.address as `0x${string}`, digest, p.signature as `0x${string}`, log)
      if (check instanceof CallRefusal) return check
      return check === 'valid' ? undefined : refused('invalid_siwx_signature', 'the wallet contract does not accept it')
    }
    if (recovered === null) return refused('invalid_siwx_malformed_signature')
    return recovered === p.address.toLowerCase() ? undefined : refused('invalid_siwx_signature')
  }

  return async function signIn(
    call: ResolvedCall,
    header: string,
    log: FastifyBaseLogger,
    nowMs: number,
  ): Promise<SignedIn | CallRefusal> {
    const access = call.entry.access!
    const parsed = parseSignInHeader(header)
    if (!parsed.ok) return refused('invalid_siwx_header', parsed.detail)
    const p = parsed.payload
    const wrong = checkSignInFields(p, call.challenge.signIn!, nowMs)
    if (wrong) return refused(wrong.reason, wrong.detail)
    const bad = await signatureHolds(p, log)
    if (bad) return bad

    let fresh
    try {
      // single use: a message is refused as too old past SIGN_IN_MAX_AGE_MS, so its nonce need not be kept longer
      fresh = await d.redis.set(d.key('siwx-nonce', p.nonce), '1', 'PX', SIGN_IN_MAX_AGE_MS + 60_000, 'NX')
    } catch (err) {
      log.error({ err: (err as Error).message }, 'sign-in nonce store unavailable')
      return retryShortly('sign-in is unavailable right now; retry shortly or pay')
    }
    if (fresh !== 'OK') return refused('invalid_siwx_nonce')

    const payer = p.address.toLowerCase()
    let grant
    try {
      grant = await d.grants.holding(payer, access.scopeId)
    } catch (err) {
      log.error({ err: (err as Error).message }, 'access grant read failed')
      return retryShortly('sign-in is unavailable right now; retry shortly or pay')
    }
    if (!grant)
      return refused(
        'siwx_no_paid_access',
        `${payer} holds no access to this ${access.scope} (a paid call gives ${access.minutes} minutes)`,
      )
    return { payer, grantPaymentId: grant.paymentId }
  }
}

export type SignInStage = ReturnType<typeof createSignInStage>

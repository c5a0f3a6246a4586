/**
 * Recover the EOA that signed an EIP-712 digest, with the native libsecp256k1 binding.
 *
 * The `secp256k1` package silently falls back to pure-JS `elliptic` when its addon did not
 * build (npm 11 skips install scripts unless allowed); that is ~20x slower on the hot path,
 * so processes call `assertNativeSecp256k1()` at start and fail loudly instead.
 *
 * Stricter than viem's `recoverAddress` in one way only: high-s signatures are refused
 * (EIP-2; USDC's `ecrecover` path refuses them too, so they could never settle).
 */
import { createRequire } from 'node:module'
import { keccak256 } from './keccak.js'
import type { HexString } from '../x402/types.js'

interface Secp256k1 {
  ecdsaRecover(sig: Uint8Array, recid: number, msg32: Uint8Array, compressed: boolean, out?: Uint8Array): Uint8Array
}

const require = createRequire(import.meta.url)
const secp256k1 = require('secp256k1') as Secp256k1

/** The result for a signature longer than 65 bytes (ERC-1271 / ERC-6492 smart wallet). */
export const SMART_WALLET_SIGNATURE = 'smart_wallet' as const

export type RecoveredSigner = HexString | null | typeof SMART_WALLET_SIGNATURE

/** True when `secp256k1` resolved to its native addon rather than the JS fallback. */
export function isNativeSecp256k1(): boolean {
  try {
    // index.js does `try { require('./bindings') } catch { require('./elliptic') }`: the
    // package export is the bindings module itself exactly when the addon loaded.
    return require('secp256k1/bindings') === secp256k1
  } catch {
    return false
  }
}

/** Throw a clear error unless the native secp256k1 addon is in use; call at process start. */
export function assertNativeSecp256k1(): void {
  if (isNativeSecp256k1()) return
  let cause: unknown
  try {
    require('secp256k1/bindings')
  } catch (err) {
    cause = err
  }
  throw new Error(
    'secp256k1: the native addon did not load, the package fell back to pure JS. ' +
      'Allow its install script (package.json "allowScripts") and run `npm rebuild secp256k1`.',
    { cause },
  )
}

// secp256k1 group order n and n/2 (for the EIP-2 low-s rule), big-endian.
const N = Buffer.from('fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141', 'hex')
const HALF_N = Buffer.from('7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a0', 'hex')

const sigBuf = Buffer.alloc(65)
const rView = sigBuf.subarray(0, 32)
const sView = sigBuf.subarray(32, 64)
const rsView = sigBuf.subarray(0, 64)
const pubBuf = new Uint8Array(65)
const pubXY = pubBuf.subarray(1)

/**
 * The lower-case address that signed `digest`, `null` for a malformed or invalid signature
 * (wrong length, bad hex, v not in {0,1,27,28}, r or s zero or >= n, high s, no point), or
 * `SMART_WALLET_SIGNATURE` when the signature is longer than 65 bytes. Never throws.
 *
 * @example
 *   const signer = recoverAuthorizer(transferAuthDigest(ds, auth), payload.signature)
 *   if (signer !== auth.from) refuse('invalid_exact_evm_payload_signature')
 */
export function recoverAuthorizer(digest: Uint8Array, signature: string): RecoveredSigner {
  if (typeof signature !== 'string' || digest.length !== 32) return null
  const len = signature.length
  if (len < 2 || signature.charCodeAt(0) !== 48 || (signature.charCodeAt(1) | 32) !== 120) return null
  if ((len & 1) === 1) return null
  if (len > 132) return HEX_RE.test(signature) ? SMART_WALLET_SIGNATURE : null
  if (len !== 132) return null
  if (sigBuf.write(signature.slice(2), 0, 65, 'hex') !== 65) return null

  const v = sigBuf[64]
  const recid = v === 27 || v === 28 ? v - 27 : v === 0 || v === 1 ? v : -1
  if (recid < 0) return null
  if (isZero(rView) || rView.compare(N) >= 0) return null
  if (isZero(sView) || sView.compare(HALF_N) > 0) return null

  try {
    secp256k1.ecdsaRecover(rsView, recid, digest, false, pubBuf)
  } catch {
    return null // no curve point for this r, or the library refused the input
  }
  return toAddress(keccak256(pubXY))
}

function isZero(b: Buffer): boolean {
  for (let i = 0; i < b.length; i++) if (b[i] !== 0) return false
  return true
}

const HEX_RE = /^0x[0-9a-fA-F]*$/
const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'))

function toAddress(hash: Uint8Array): HexString {
  let s = '0x'
  for (let i = 12; i < 32; i++) s += HEX[hash[i]]
  return s as HexString
}

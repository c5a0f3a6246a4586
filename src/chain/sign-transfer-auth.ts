/**
 * Signs EIP-3009 `TransferWithAuthorization` with the native secp256k1 binding over the
 * hand-written EIP-712 digest of transfer-auth-digest.ts, for the agent payment hot path
 * (viem's signTypedData re-walks the types and signs in JavaScript). The caller chooses the
 * nonce, so a payment can be reserved under its nonce before it is signed.
 * test/unit/chain/sign-transfer-auth.test.ts checks it against viem's signTypedData.
 */
import { randomBytes } from 'node:crypto'
import { createRequire } from 'node:module'
import {
  makeDomainSeparator,
  transferAuthDigest,
  type TransferAuthDomain,
  type TransferAuthMessage,
} from './transfer-auth-digest.js'

const secp = createRequire(import.meta.url)('secp256k1') as {
  ecdsaSign(msg: Uint8Array, key: Uint8Array): { signature: Uint8Array; recid: number }
}
const domains = new Map<string, Uint8Array>()

/** The domain separator, computed once per (name, version, chain, token). */
export function domainSeparatorFor(domain: TransferAuthDomain): Uint8Array {
  const k = `${domain.chainId}:${domain.verifyingContract.toLowerCase()}:${domain.name}:${domain.version}`
  let ds = domains.get(k)
  if (!ds) {
    if (domains.size >= 64) domains.clear()
    ds = makeDomainSeparator(domain)
    domains.set(k, ds)
  }
  return ds
}

/**
 * The 65-byte signature (r ‖ s ‖ v, v = 27/28) as 0x-hex, as viem's signTypedData returns it.
 *
 * @example
 *   const sig = signTransferAuth(keyBytes, { name: 'USDC', version: '2', chainId, verifyingContract: usdc }, message)
 */
export function signTransferAuth(
  privateKey: Uint8Array,
  domain: TransferAuthDomain,
  message: TransferAuthMessage,
): `0x${string}` {
  const { signature, recid } = secp.ecdsaSign(transferAuthDigest(domainSeparatorFor(domain), message), privateKey)
  return `0x${Buffer.from(signature.buffer, signature.byteOffset, 64).toString('hex')}${(27 + recid).toString(16)}`
}

// Nonces come from a pool refilled 256 at a time: one randomBytes call instead of one per payment.
let pool = Buffer.alloc(0)
let poolAt = 0

/** A fresh random 32-byte nonce as 0x-hex. */
export function randomNonce(): `0x${string}` {
  if (poolAt + 32 > pool.length) {
    pool = randomBytes(32 * 256)
    poolAt = 0
  }
  const hex = pool.toString('hex', poolAt, poolAt + 32)
  pool.fill(0, poolAt, poolAt + 32)
  poolAt += 32
  return `0x${hex}`
}

/**
 * Hand-written EIP-712 digest of EIP-3009 `TransferWithAuthorization`, for the hot path.
 *
 * viem's `hashTypedData` walks the type description on every call; this struct never changes,
 * so the type hash and the domain separator are computed once and each digest is two keccak
 * calls over preallocated buffers. test/unit/x402/recover-signer.test.ts checks it against
 * `hashTypedData` on random inputs.
 */
import { keccak256 } from './keccak.js'

const utf8 = new TextEncoder()

const TRANSFER_WITH_AUTHORIZATION_TYPEHASH = keccak256(
  utf8.encode(
    'TransferWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)',
  ),
)
const EIP712_DOMAIN_TYPEHASH = keccak256(
  utf8.encode('EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)'),
)

const U256_MAX = (1n << 256n) - 1n
const U64_MAX = (1n << 64n) - 1n

export interface TransferAuthDomain {
  name: string
  version: string
  chainId: number | bigint
  /** the token contract */
  verifyingContract: string
}

/** The message fields; addresses and nonce as 0x-hex (any case), numbers as bigints. */
export interface TransferAuthMessage {
  from: string
  to: string
  value: bigint
  validAfter: bigint
  validBefore: bigint
  nonce: string
}

/**
 * The EIP-712 domain separator, computed once per (token, chain).
 *
 * @example
 *   const ds = makeDomainSeparator({ name: 'USDC', version: '2', chainId: 84532, verifyingContract: usdc })
 */
export function makeDomainSeparator(domain: TransferAuthDomain): Uint8Array {
  const buf = Buffer.alloc(5 * 32)
  buf.set(EIP712_DOMAIN_TYPEHASH, 0)
  buf.set(keccak256(utf8.encode(domain.name)), 32)
  buf.set(keccak256(utf8.encode(domain.version)), 64)
  writeUint256(buf, 96, BigInt(domain.chainId))
  writeAddress(buf, 128, domain.verifyingContract)
  return keccak256(buf)
}

// One scratch buffer per module: JavaScript is single-threaded and nothing here awaits.
const structBuf = Buffer.alloc(7 * 32)
structBuf.set(TRANSFER_WITH_AUTHORIZATION_TYPEHASH, 0)
const digestBuf = Buffer.alloc(2 + 32 + 32)
digestBuf[0] = 0x19
digestBuf[1] = 0x01

/**
 * keccak256(0x1901 ‖ domainSeparator ‖ hashStruct(message)). Throws on malformed hex or
 * out-of-range numbers (callers pass decoder-validated input, so that is a programming error).
 */
export function transferAuthDigest(domainSeparator: Uint8Array, message: TransferAuthMessage): Uint8Array {
  writeAddress(structBuf, 32, message.from)
  writeAddress(structBuf, 64, message.to)
  writeUint256(structBuf, 96, message.value)
  writeUint256(structBuf, 128, message.validAfter)
  writeUint256(structBuf, 160, message.validBefore)
  writeBytes32(structBuf, 192, message.nonce)
  return eip712Digest(domainSeparator, keccak256(structBuf))
}

/** keccak256(0x1901 ‖ domainSeparator ‖ structHash): the EIP-712 digest of any typed message. */
export function eip712Digest(domainSeparator: Uint8Array, structHash: Uint8Array): Uint8Array {
  digestBuf.set(domainSeparator, 2)
  digestBuf.set(structHash, 34)
  return keccak256(digestBuf)
}

export function writeAddress(buf: Buffer, offset: number, address: string): void {
  if (address.length !== 42 || address.charCodeAt(0) !== 48 || (address.charCodeAt(1) | 32) !== 120) {
    throw new TypeError(`not a 20-byte 0x address: ${address}`)
  }
  buf.fill(0, offset, offset + 12)
  // Buffer#write('hex') stops at the first non-hex pair, so the count proves validity.
  if (buf.write(address.slice(2), offset + 12, 20, 'hex') !== 20) {
    throw new TypeError(`not a 20-byte 0x address: ${address}`)
  }
}

export function writeBytes32(buf: Buffer, offset: number, hex: string): void {
  if (hex.length !== 66 || hex.charCodeAt(0) !== 48 || (hex.charCodeAt(1) | 32) !== 120) {
    throw new TypeError(`not 32 bytes of 0x hex: ${hex}`)
  }
  if (buf.write(hex.slice(2), offset, 32, 'hex') !== 32) throw new TypeError(`not 32 bytes of 0x hex: ${hex}`)
}

export function writeUint256(buf: Buffer, offset: number, value: bigint): void {
  if (value >= 0n && value <= U64_MAX) {
    // the common case (amounts, timestamps): one 64-bit write
    buf.fill(0, offset, offset + 24)
    buf.writeBigUInt64BE(value, offset + 24)
    return
  }
  if (value < 0n || value > U256_MAX) throw new RangeError(`not a uint256: ${value}`)
  for (let i = 3; i >= 0; i--) {
    buf.writeBigUInt64BE(value & U64_MAX, offset + i * 8)
    value >>= 64n
  }
}

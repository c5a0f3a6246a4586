/**
 * The EIP-712 hashes of the `batch-settlement` scheme, computed natively (src/chain/keccak.ts)
 * so a voucher costs no JS hashing in the hot path:
 *
 * - channelId = hashTypedData(ChannelConfig) under the `x402 Batch Settlement` domain (chain id,
 *   canonical contract): the spec's "Channel creation" and rule 1;
 * - the voucher digest = hashTypedData(Voucher{channelId, maxClaimableAmount}), what the payer
 *   authorizer signs (rule 6).
 */
import { keccak256 } from '../../chain/keccak.js'
import {
  BATCH_DOMAIN_NAME,
  BATCH_DOMAIN_VERSION,
  BATCH_SETTLEMENT_ADDRESS,
  CHANNEL_CONFIG_TYPE,
  VOUCHER_TYPE,
} from './constants.js'

/** A channel's immutable config, addresses lower-case, salt 32-byte hex. */
export interface ChannelConfig {
  payer: `0x${string}`
  payerAuthorizer: `0x${string}`
  receiver: `0x${string}`
  receiverAuthorizer: `0x${string}`
  token: `0x${string}`
  withdrawDelay: number
  salt: `0x${string}`
}

const utf8 = (s: string) => new TextEncoder().encode(s)
const hex = (b: Uint8Array) => `0x${Buffer.from(b).toString('hex')}` as `0x${string}`

function word(v: bigint | string): Uint8Array {
  const out = new Uint8Array(32)
  if (typeof v === 'string') {
    const b = Buffer.from(v.slice(2), 'hex')
    out.set(b, 32 - b.length)
    return out
  }
  let x = v
  for (let i = 31; i >= 0 && x > 0n; i--) {
    out[i] = Number(x & 0xffn)
    x >>= 8n
  }
  return out
}

function concat(parts: Uint8Array[]): Uint8Array {
  return new Uint8Array(Buffer.concat(parts))
}

const CONFIG_TYPEHASH = keccak256(utf8(CHANNEL_CONFIG_TYPE))
const VOUCHER_TYPEHASH = keccak256(utf8(VOUCHER_TYPE))
const DOMAIN_TYPEHASH = keccak256(
  utf8('EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)'),
)

/** The domain separator for one chain (the canonical contract address). */
export function batchDomainSeparator(chainId: number): Uint8Array {
  return keccak256(
    concat([
      DOMAIN_TYPEHASH,
      keccak256(utf8(BATCH_DOMAIN_NAME)),
      keccak256(utf8(BATCH_DOMAIN_VERSION)),
      word(BigInt(chainId)),
      word(BATCH_SETTLEMENT_ADDRESS),
    ]),
  )
}

const typedDigest = (domain: Uint8Array, struct: Uint8Array) =>
  keccak256(concat([new Uint8Array([0x19, 0x01]), domain, struct]))

/** The channel id of `c` (0x-hex lower-case). */
export function channelIdOf(domain: Uint8Array, c: ChannelConfig): `0x${string}` {
  const struct = keccak256(
    concat([
      CONFIG_TYPEHASH,
      word(c.payer),
      word(c.payerAuthorizer),
      word(c.receiver),
      word(c.receiverAuthorizer),
      word(c.token),
      word(BigInt(c.withdrawDelay)),
      word(c.salt),
    ]),
  )
  return hex(typedDigest(domain, struct))
}

/** The digest a voucher's signature is made over. */
export function voucherDigestOf(domain: Uint8Array, channelId: `0x${string}`, maxClaimable: bigint): Uint8Array {
  return typedDigest(domain, keccak256(concat([VOUCHER_TYPEHASH, word(channelId), word(maxClaimable)])))
}

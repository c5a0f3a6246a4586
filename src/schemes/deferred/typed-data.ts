/**
 * The EIP-712 messages of the x402 `deferred` scheme on EVM: the buyer's voucher, the escrow's
 * deposit, flush and flush-all authorizations, and the asset's EIP-2612 permit, typed for viem
 * (`hashTypedData`, `signTypedData`, `recoverTypedDataAddress`).
 *
 * The Voucher has the nine fields of coinbase/x402 `specs/schemes/deferred/scheme_deferred_evm.md`
 * in that order, and no `expiry` (an older draft of the escrow text had one; see
 * docs/architecture.md, "Deferred escrow"). The domain is the escrow contract's: name
 * "DeferredPaymentEscrow", version "1", the voucher's chain and the escrow's address, as
 * src/chain/contracts/DeferredPaymentEscrow.sol computes it.
 *
 * @example
 * const digest = hashTypedData(voucherTypedData(voucher))
 * const buyer = await recoverTypedDataAddress({ ...voucherTypedData(voucher), signature })
 */
import type { Address, Hex } from 'viem'

export const DEFERRED_ESCROW_DOMAIN_NAME = 'DeferredPaymentEscrow'
export const DEFERRED_ESCROW_DOMAIN_VERSION = '1'

export interface DeferredVoucher {
  /** bytes32, one per buyer-seller relationship; aggregation keeps it */
  id: Hex
  buyer: Address
  seller: Address
  /** everything this voucher id owes so far (atomic units); only grows */
  valueAggregate: bigint
  asset: Address
  /** unix seconds of the last aggregation (uint64) */
  timestamp: bigint
  /** incremented with each aggregation */
  nonce: bigint
  escrow: Address
  chainId: bigint
}

export interface DepositAuthorizationMessage {
  buyer: Address
  seller: Address
  asset: Address
  amount: bigint
  /** bytes32, random; the escrow refuses it a second time */
  nonce: Hex
  /** unix seconds (uint64) after which the escrow refuses it */
  expiry: bigint
}

export interface FlushAuthorizationMessage {
  buyer: Address
  seller: Address
  asset: Address
  nonce: Hex
  expiry: bigint
}

export interface FlushAllAuthorizationMessage {
  buyer: Address
  nonce: Hex
  expiry: bigint
}

/** EIP-2612 Permit as the token signs over it. */
export interface PermitMessage {
  owner: Address
  spender: Address
  value: bigint
  nonce: bigint
  deadline: bigint
}

export const voucherTypes = {
  Voucher: [
    { name: 'id', type: 'bytes32' },
    { name: 'buyer', type: 'address' },
    { name: 'seller', type: 'address' },
    { name: 'valueAggregate', type: 'uint256' },
    { name: 'asset', type: 'address' },
    { name: 'timestamp', type: 'uint64' },
    { name: 'nonce', type: 'uint256' },
    { name: 'escrow', type: 'address' },
    { name: 'chainId', type: 'uint256' },
  ],
} as const

export const depositAuthorizationTypes = {
  DepositAuthorization: [
    { name: 'buyer', type: 'address' },
    { name: 'seller', type: 'address' },
    { name: 'asset', type: 'address' },
    { name: 'amount', type: 'uint256' },
    { name: 'nonce', type: 'bytes32' },
    { name: 'expiry', type: 'uint64' },
  ],
} as const

export const flushAuthorizationTypes = {
  FlushAuthorization: [
    { name: 'buyer', type: 'address' },
    { name: 'seller', type: 'address' },
    { name: 'asset', type: 'address' },
    { name: 'nonce', type: 'bytes32' },
    { name: 'expiry', type: 'uint64' },
  ],
} as const

export const flushAllAuthorizationTypes = {
  FlushAllAuthorization: [
    { name: 'buyer', type: 'address' },
    { name: 'nonce', type: 'bytes32' },
    { name: 'expiry', type: 'uint64' },
  ],
} as const

export const permitTypes = {
  Permit: [
    { name: 'owner', type: 'address' },
    { name: 'spender', type: 'address' },
    { name: 'value', type: 'uint256' },
    { name: 'nonce', type: 'uint256' },
    { name: 'deadline', type: 'uint256' },
  ],
} as const

/** The escrow contract's EIP-712 domain on a chain. */
export function escrowDomain(chainId: bigint | number, escrow: Address) {
  return {
    name: DEFERRED_ESCROW_DOMAIN_NAME,
    version: DEFERRED_ESCROW_DOMAIN_VERSION,
    chainId: BigInt(chainId),
    verifyingContract: escrow,
  } as const
}

/** A voucher's typed data; its domain comes from the voucher's own `chainId` and `escrow`. */
export function voucherTypedData(voucher: DeferredVoucher) {
  return {
    domain: escrowDomain(voucher.chainId, voucher.escrow),
    types: voucherTypes,
    primaryType: 'Voucher',
    message: voucher,
  } as const
}

export function depositAuthorizationTypedData(
  auth: DepositAuthorizationMessage,
  chainId: bigint | number,
  escrow: Address,
) {
  return {
    domain: escrowDomain(chainId, escrow),
    types: depositAuthorizationTypes,
    primaryType: 'DepositAuthorization',
    message: auth,
  } as const
}

export function flushAuthorizationTypedData(
  auth: FlushAuthorizationMessage,
  chainId: bigint | number,
  escrow: Address,
) {
  return {
    domain: escrowDomain(chainId, escrow),
    types: flushAuthorizationTypes,
    primaryType: 'FlushAuthorization',
    message: auth,
  } as const
}

export function flushAllAuthorizationTypedData(
  auth: FlushAllAuthorizationMessage,
  chainId: bigint | number,
  escrow: Address,
) {
  return {
    domain: escrowDomain(chainId, escrow),
    types: flushAllAuthorizationTypes,
    primaryType: 'FlushAllAuthorization',
    message: auth,
  } as const
}

/** An EIP-2612 permit's typed data in the asset's domain (its name and version, as the payload's `permit.domain` says). */
export function permitTypedData(
  permit: PermitMessage,
  token: { name: string; version: string; chainId: bigint | number; address: Address },
) {
  return {
    domain: {
      name: token.name,
      version: token.version,
      chainId: BigInt(token.chainId),
      verifyingContract: token.address,
    },
    types: permitTypes,
    primaryType: 'Permit',
    message: permit,
  } as const
}

/**
 * What the `deferred` scheme's stages share (deferred-scheme.ts builds it once per proxy), the
 * payment `verify` hands to `reserve`, and the voucher's JSON form of the challenge and the spec.
 */
import { getAddress, type Address, type Hex } from 'viem'
import type { SignerRecovery } from '../../chain/signer-recovery.js'
import { appError } from '../../errors.js'
import { CallRefusal } from '../../seam/types.js'
import type { VerifiedPayment } from '../scheme.js'
import type { SchemeDeps } from '../scheme-deps.js'
import type { DeferredDeposit } from './decode-payload.js'
import type { DepositExecutor } from './deposit.js'
import type { EscrowReader } from './escrow-reader.js'
import type { DeferredVoucher } from './typed-data.js'
import type { VoucherHeads } from './voucher-heads.js'
import type { VoucherStore } from './voucher-store.js'

/** A voucher has no expiry; the ledger's `valid_before` of a deferred payment says "never" (9999-12-31). */
export const DEFERRED_NO_EXPIRY = 253_402_300_799

export interface DeferredContext {
  config: SchemeDeps['config']
  chain: SchemeDeps['chain']
  /** lower-case */
  escrow: Address
  chainId: bigint
  /** the escrow's EIP-712 domain separator */
  domainSeparator: Uint8Array
  store: VoucherStore
  heads: VoucherHeads
  reader: EscrowReader
  deposits: DepositExecutor
  recovery: SignerRecovery
}

/** A deferred payment after `verify`. */
export interface DeferredPayment extends VerifiedPayment {
  readonly voucher: DeferredVoucher
  readonly signature: Hex
  readonly digest: Hex
  readonly digestBytes: Uint8Array
  /** checked in verify, executed in reserve before the voucher is accepted */
  readonly deposit: DeferredDeposit | undefined
}

export const retryShortly = (detail: string) =>
  CallRefusal.error(appError('service_unavailable', { detail }, { headers: { 'retry-after': '1' } }))

/** A uint as the spec's examples write it: a JSON number while it is safe, else a decimal string. */
const num = (v: bigint): number | string => (v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v.toString())

/** The voucher as the challenge's `extra.voucher` carries it (checksummed addresses, the spec's number forms). */
export function voucherJson(v: DeferredVoucher): Record<string, unknown> {
  return {
    id: v.id,
    buyer: getAddress(v.buyer),
    seller: getAddress(v.seller),
    valueAggregate: v.valueAggregate.toString(),
    asset: getAddress(v.asset),
    timestamp: num(v.timestamp),
    nonce: num(v.nonce),
    escrow: getAddress(v.escrow),
    chainId: num(v.chainId),
  }
}

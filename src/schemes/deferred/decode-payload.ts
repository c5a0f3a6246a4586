/**
 * Reads the `payload` of a `deferred` payment (coinbase/x402 `scheme_deferred_evm.md`, "PaymentPayload
 * `payload` Field"): the signed voucher, and optionally a deposit — the escrow's deposit
 * authorization, with an EIP-2612 permit when the buyer has not approved the escrow yet.
 *
 * Shape only: every field present with its type, integers in range, addresses and hashes well
 * formed. Whether the signatures recover the buyer, the voucher fits the requirements and its
 * predecessor, and the escrow holds enough is verification, a later stage. Addresses come back
 * lower-case; integers as bigint (the wire carries them as JSON numbers or decimal strings).
 *
 * @example
 * const decoded = decodeDeferredPayload(envelope.payload)
 * if (!decoded.ok) return decoded // invalid_payload, the message names the field
 */
import type { Address, Hex } from 'viem'
import { refuse, type Refusal } from '../../x402/reasons.js'
import type { DeferredVoucher, DepositAuthorizationMessage, PermitMessage } from './typed-data.js'

export interface DeferredPermit extends PermitMessage {
  /** the asset's EIP-712 domain name and version */
  domain: { name: string; version: string }
  signature: Hex
}

export interface DeferredDeposit {
  authorization: DepositAuthorizationMessage & { signature: Hex }
  permit?: DeferredPermit
}

export interface DeferredPayload {
  voucher: DeferredVoucher
  signature: Hex
  deposit?: DeferredDeposit
}

export type DecodedDeferredPayload = { ok: true; payload: DeferredPayload } | Refusal

const UINT64_MAX = 2n ** 64n - 1n
const UINT256_MAX = 2n ** 256n - 1n
/** ERC-1271 signatures can be longer than 65 bytes; the header size cap bounds them too. */
const MAX_SIGNATURE_BYTES = 2048

/** A field that failed, named by its path from `payload` (`voucher.valueAggregate`). */
class FieldError extends Error {}

type Obj = Record<string, unknown>

function isObject(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && Object.getPrototypeOf(v) === Object.prototype
}

function object(parent: Obj, key: string, path: string): Obj {
  const v = parent[key]
  if (!isObject(v)) throw new FieldError(`${path} must be an object`)
  return v
}

function address(o: Obj, key: string, path: string): Address {
  const v = o[key]
  if (typeof v !== 'string' || !/^0x[0-9a-fA-F]{40}$/.test(v))
    throw new FieldError(`${path}.${key} must be a 0x-prefixed 20-byte hex address`)
  return v.toLowerCase() as Address
}

function bytes32(o: Obj, key: string, path: string): Hex {
  const v = o[key]
  if (typeof v !== 'string' || !/^0x[0-9a-fA-F]{64}$/.test(v))
    throw new FieldError(`${path}.${key} must be a 0x-prefixed 32-byte hex string`)
  return v.toLowerCase() as Hex
}

function signature(o: Obj, key: string, path: string): Hex {
  const v = o[key]
  if (typeof v !== 'string' || !/^0x([0-9a-fA-F]{2})+$/.test(v) || v.length > 2 + 2 * MAX_SIGNATURE_BYTES) {
    throw new FieldError(
      `${path}${path ? '.' : ''}${key} must be 0x-prefixed hex bytes (at most ${MAX_SIGNATURE_BYTES})`,
    )
  }
  return v.toLowerCase() as Hex
}

/** A non-negative integer as a JSON number (safe integers only) or a decimal string, up to `max`. */
function uint(o: Obj, key: string, path: string, max: bigint, bits: number): bigint {
  const v = o[key]
  let n: bigint | undefined
  if (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) n = BigInt(v)
  else if (typeof v === 'string' && /^(0|[1-9][0-9]{0,77})$/.test(v)) n = BigInt(v)
  if (n === undefined || n > max)
    throw new FieldError(`${path}.${key} must be a uint${bits}, as a decimal string or a safe integer`)
  return n
}

function text(o: Obj, key: string, path: string): string {
  const v = o[key]
  if (typeof v !== 'string' || v.length === 0 || v.length > 128)
    throw new FieldError(`${path}.${key} must be a non-empty string of at most 128 characters`)
  return v
}

function readVoucher(o: Obj): DeferredVoucher {
  const p = 'voucher'
  return {
    id: bytes32(o, 'id', p),
    buyer: address(o, 'buyer', p),
    seller: address(o, 'seller', p),
    valueAggregate: uint(o, 'valueAggregate', p, UINT256_MAX, 256),
    asset: address(o, 'asset', p),
    timestamp: uint(o, 'timestamp', p, UINT64_MAX, 64),
    nonce: uint(o, 'nonce', p, UINT256_MAX, 256),
    escrow: address(o, 'escrow', p),
    chainId: uint(o, 'chainId', p, UINT256_MAX, 256),
  }
}

function readDeposit(o: Obj): DeferredDeposit {
  const a = object(o, 'authorization', 'deposit.authorization')
  const p = 'deposit.authorization'
  const deposit: DeferredDeposit = {
    authorization: {
      buyer: address(a, 'buyer', p),
      seller: address(a, 'seller', p),
      asset: address(a, 'asset', p),
      amount: uint(a, 'amount', p, UINT256_MAX, 256),
      nonce: bytes32(a, 'nonce', p),
      expiry: uint(a, 'expiry', p, UINT64_MAX, 64),
      signature: signature(a, 'signature', p),
    },
  }
  if (o.permit !== undefined) {
    const m = object(o, 'permit', 'deposit.permit')
    const q = 'deposit.permit'
    const d = object(m, 'domain', 'deposit.permit.domain')
    deposit.permit = {
      owner: address(m, 'owner', q),
      spender: address(m, 'spender', q),
      value: uint(m, 'value', q, UINT256_MAX, 256),
      nonce: uint(m, 'nonce', q, UINT256_MAX, 256),
      deadline: uint(m, 'deadline', q, UINT256_MAX, 256),
      domain: { name: text(d, 'name', 'deposit.permit.domain'), version: text(d, 'version', 'deposit.permit.domain') },
      signature: signature(m, 'signature', q),
    }
  }
  return deposit
}

/** Decodes a `deferred` payment payload, or refuses `invalid_payload` naming the first bad field. */
export function decodeDeferredPayload(payload: unknown): DecodedDeferredPayload {
  try {
    if (!isObject(payload)) throw new FieldError('payload must be an object')
    if (payload.depositAuthorization !== undefined && payload.deposit === undefined) {
      throw new FieldError(
        "depositAuthorization is an older draft's name: send the deposit as payload.deposit {authorization, permit?}",
      )
    }
    const out: DeferredPayload = {
      voucher: readVoucher(object(payload, 'voucher', 'voucher')),
      signature: signature(payload, 'signature', ''),
    }
    if (payload.deposit !== undefined) out.deposit = readDeposit(object(payload, 'deposit', 'deposit'))
    return { ok: true, payload: out }
  } catch (e) {
    if (e instanceof FieldError) return refuse('invalid_payload', e.message)
    throw e
  }
}

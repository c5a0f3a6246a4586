/**
 * The payload of the `upto` scheme: the Permit2 `PermitWitnessTransferFrom` authorization read from
 * the wire (`decodeUptoPayload`, refusing `invalid_payload` with the field), and the digest Permit2
 * checks its signature against.
 */
import { hashTypedData, type Address, type Hex } from 'viem'
import { PERMIT2_ADDRESS } from '../../chain/permit2.js'
import { refuse, type Refusal } from '../../x402/reasons.js'
import { UPTO_WITNESS_TYPES } from './typed-data.js'

/** The Permit2 authorization of an upto payload, addresses lower-case, integers as bigint. */
export interface UptoAuthorization {
  from: Address
  token: Address
  amount: bigint
  spender: Address
  nonce: bigint
  deadline: bigint
  to: Address
  facilitator: Address
  validAfter: bigint
}

/** The digest Permit2 checks the signature against. */
export function uptoDigest(a: UptoAuthorization, chainId: number): Hex {
  return hashTypedData({
    domain: { name: 'Permit2', chainId, verifyingContract: PERMIT2_ADDRESS },
    types: UPTO_WITNESS_TYPES,
    primaryType: 'PermitWitnessTransferFrom',
    message: {
      permitted: { token: a.token, amount: a.amount },
      spender: a.spender,
      nonce: a.nonce,
      deadline: a.deadline,
      witness: { to: a.to, facilitator: a.facilitator, validAfter: a.validAfter },
    },
  })
}

type Obj = Record<string, unknown>
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v)
const ADDRESS = /^0x[0-9a-fA-F]{40}$/
const UINT = /^(0|[1-9][0-9]{0,77})$/
// 64 or 65 bytes for a key; longer for a smart wallet (the header size cap bounds it)
const SIGNATURE = /^0x([0-9a-fA-F]{2}){64,}$/
const U256_MAX = (1n << 256n) - 1n

class FieldError extends Error {}
function addr(o: Obj, k: string, path: string): Address {
  const v = o[k]
  if (typeof v !== 'string' || !ADDRESS.test(v))
    throw new FieldError(`${path}.${k} must be a 0x-prefixed 20-byte address`)
  return v.toLowerCase() as Address
}
function uint(o: Obj, k: string, path: string): bigint {
  const v = o[k]
  const n = typeof v === 'string' && UINT.test(v) ? BigInt(v) : undefined
  if (n === undefined || n > U256_MAX) throw new FieldError(`${path}.${k} must be a uint256 as a decimal string`)
  return n
}
function obj(o: Obj, k: string, path: string): Obj {
  const v = o[k]
  if (!isObj(v)) throw new FieldError(`${path}.${k} must be an object`)
  return v
}

/** Reads an upto payload `{signature, permit2Authorization}`, or refuses `invalid_payload` naming the field. */
export function decodeUptoPayload(
  payload: unknown,
): { ok: true; signature: Hex; authorization: UptoAuthorization } | Refusal {
  try {
    if (!isObj(payload)) throw new FieldError('payload must be an object')
    const sig = payload.signature
    if (typeof sig !== 'string' || !SIGNATURE.test(sig))
      throw new FieldError('payload.signature must be a 0x-prefixed hex signature of at least 64 bytes')
    const a = obj(payload, 'permit2Authorization', 'payload')
    const p = 'payload.permit2Authorization'
    const permitted = obj(a, 'permitted', p)
    const witness = obj(a, 'witness', p)
    return {
      ok: true,
      signature: sig.toLowerCase() as Hex,
      authorization: {
        from: addr(a, 'from', p),
        token: addr(permitted, 'token', `${p}.permitted`),
        amount: uint(permitted, 'amount', `${p}.permitted`),
        spender: addr(a, 'spender', p),
        nonce: uint(a, 'nonce', p),
        deadline: uint(a, 'deadline', p),
        to: addr(witness, 'to', `${p}.witness`),
        facilitator: addr(witness, 'facilitator', `${p}.witness`),
        validAfter: uint(witness, 'validAfter', `${p}.witness`),
      },
    }
  } catch (e) {
    if (e instanceof FieldError) return refuse('invalid_payload', e.message)
    throw e
  }
}

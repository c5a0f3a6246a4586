/**
 * Reads a `batch-settlement` payload (the spec's "Client: Payment Construction"): `type`
 * `deposit`, `voucher` or `refund`, the channel config, the cumulative voucher, and per type the
 * deposit's ERC-3009 authorization or the refund's optional amount. Everything is checked for
 * shape here, nothing against the endpoint: a refusal names the field and uses the spec's code
 * for the payload type.
 */
import type { ReasonCode } from '../../x402/reasons.js'
import { U128_MAX } from './constants.js'
import type { ChannelConfig } from './typed-data.js'

export type PayloadType = 'deposit' | 'voucher' | 'refund'

export interface Erc3009Deposit {
  amount: bigint
  validAfter: bigint
  validBefore: bigint
  /** uint256 as 0x-hex or decimal, as the client sent it */
  salt: bigint
  signature: `0x${string}`
}

export interface BatchPayload {
  type: PayloadType
  config: ChannelConfig
  channelId: `0x${string}`
  maxClaimable: bigint
  signature: `0x${string}`
  deposit?: Erc3009Deposit
  /** refund: the partial amount; undefined: all that is unclaimed */
  refundAmount?: bigint
}

type Obj = Record<string, unknown>
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v)
const ADDRESS = /^0x[0-9a-fA-F]{40}$/
const BYTES32 = /^0x[0-9a-fA-F]{64}$/
const UINT = /^(0|[1-9][0-9]{0,77})$/
const HEX_UINT = /^0x[0-9a-fA-F]{1,64}$/
// 65 bytes for a key; longer for a smart wallet (the header size cap bounds it)
const SIGNATURE = /^0x([0-9a-fA-F]{2}){65,}$/
const U256_MAX = (1n << 256n) - 1n

class FieldError extends Error {
  constructor(
    readonly reason: ReasonCode,
    message: string,
  ) {
    super(message)
  }
}

export type Decoded = { ok: true; payload: BatchPayload } | { ok: false; reason: ReasonCode; detail: string }

const CODE: Record<PayloadType, ReasonCode> = {
  deposit: 'invalid_batch_settlement_evm_deposit_payload',
  voucher: 'invalid_batch_settlement_evm_voucher_payload',
  refund: 'invalid_batch_settlement_evm_refund_payload',
}

function reader(reason: ReasonCode) {
  const fail = (m: string): never => {
    throw new FieldError(reason, m)
  }
  return {
    addr(o: Obj, k: string, path: string): `0x${string}` {
      const v = o[k]
      if (typeof v !== 'string' || !ADDRESS.test(v)) fail(`${path}.${k} must be a 0x-prefixed 20-byte address`)
      return (v as string).toLowerCase() as `0x${string}`
    },
    uint(o: Obj, k: string, path: string, max = U256_MAX): bigint {
      const v = o[k]
      const n = typeof v === 'string' && UINT.test(v) ? BigInt(v) : undefined
      if (n === undefined || n > max) fail(`${path}.${k} must be an unsigned integer as a decimal string`)
      return n!
    },
    obj(o: Obj, k: string, path: string): Obj {
      const v = o[k]
      if (!isObj(v)) fail(`${path}.${k} must be an object`)
      return v as Obj
    },
    bytes32(o: Obj, k: string, path: string): `0x${string}` {
      const v = o[k]
      if (typeof v !== 'string' || !BYTES32.test(v)) fail(`${path}.${k} must be 0x-prefixed 32-byte hex`)
      return (v as string).toLowerCase() as `0x${string}`
    },
    signature(o: Obj, k: string, path: string): `0x${string}` {
      const v = o[k]
      if (typeof v !== 'string' || !SIGNATURE.test(v)) fail(`${path}.${k} must be a 0x-prefixed hex signature`)
      return (v as string).toLowerCase() as `0x${string}`
    },
    fail,
  }
}

function channelConfig(r: ReturnType<typeof reader>, p: Obj): ChannelConfig {
  const c = r.obj(p, 'channelConfig', 'payload')
  const path = 'payload.channelConfig'
  const wd = c.withdrawDelay
  if (typeof wd !== 'number' || !Number.isSafeInteger(wd) || wd < 0 || wd >= 2 ** 40)
    r.fail(`${path}.withdrawDelay must be an integer number of seconds`)
  return {
    payer: r.addr(c, 'payer', path),
    payerAuthorizer: r.addr(c, 'payerAuthorizer', path),
    receiver: r.addr(c, 'receiver', path),
    receiverAuthorizer: r.addr(c, 'receiverAuthorizer', path),
    token: r.addr(c, 'token', path),
    withdrawDelay: wd as number,
    salt: r.bytes32(c, 'salt', path),
  }
}

function erc3009(p: Obj): Erc3009Deposit {
  const r = reader(CODE.deposit)
  const d = r.obj(p, 'deposit', 'payload')
  const amount = r.uint(d, 'amount', 'payload.deposit', U128_MAX)
  if (amount === 0n) r.fail('payload.deposit.amount must be positive')
  const auth = r.obj(d, 'authorization', 'payload.deposit')
  const e = auth.erc3009Authorization
  if (!isObj(e)) {
    throw new FieldError(
      'invalid_batch_settlement_evm_erc3009_authorization_required',
      'payload.deposit.authorization.erc3009Authorization is missing (permit2 deposits are not offered here)',
    )
  }
  const path = 'payload.deposit.authorization.erc3009Authorization'
  const saltRaw = e.salt
  const salt =
    typeof saltRaw === 'string' && HEX_UINT.test(saltRaw)
      ? BigInt(saltRaw)
      : typeof saltRaw === 'string' && UINT.test(saltRaw)
        ? BigInt(saltRaw)
        : undefined
  if (salt === undefined || salt > U256_MAX) r.fail(`${path}.salt must be a uint256 (0x-hex or decimal)`)
  return {
    amount,
    validAfter: r.uint(e, 'validAfter', path),
    validBefore: r.uint(e, 'validBefore', path),
    salt: salt!,
    signature: r.signature(e, 'signature', path),
  }
}

/** The payload, or the spec's code for its type with the field at fault. */
export function decodeBatchPayload(payload: unknown): Decoded {
  try {
    if (!isObj(payload)) throw new FieldError('invalid_batch_settlement_evm_payload_type', 'payload must be an object')
    const type = payload.type
    if (type !== 'deposit' && type !== 'voucher' && type !== 'refund')
      throw new FieldError(
        'invalid_batch_settlement_evm_payload_type',
        'payload.type must be "deposit", "voucher" or "refund"',
      )
    const r = reader(CODE[type])
    const config = channelConfig(r, payload)
    const v = r.obj(payload, 'voucher', 'payload')
    const out: BatchPayload = {
      type,
      config,
      channelId: r.bytes32(v, 'channelId', 'payload.voucher'),
      maxClaimable: r.uint(v, 'maxClaimableAmount', 'payload.voucher', U128_MAX),
      signature: r.signature(v, 'signature', 'payload.voucher'),
    }
    if (type === 'deposit') out.deposit = erc3009(payload)
    if (type === 'refund' && payload.amount !== undefined) {
      const a = payload.amount
      if (typeof a !== 'string' || !UINT.test(a) || a === '0' || BigInt(a) > U128_MAX)
        throw new FieldError('invalid_batch_settlement_evm_refund_amount_invalid', 'payload.amount must be positive')
      out.refundAmount = BigInt(a)
    }
    return { ok: true, payload: out }
  } catch (e) {
    if (e instanceof FieldError) return { ok: false, reason: e.reason, detail: e.message }
    throw e
  }
}

/**
 * Signs an x402 `deferred` EVM payment as a buyer (coinbase/x402 `scheme_deferred_evm.md`): the
 * next voucher for a requirement — aggregated onto the latest one the seller showed in
 * `extra.voucher` (PAYER-IDENTIFIER) when that one is really ours, else a new voucher id — and,
 * when asked, a `deposit`: the escrow's DepositAuthorization, with an EIP-2612 permit while the
 * asset's allowance to the escrow is short. Shared by `wrapFetch` (local key) and the platform's
 * agent payments (custodial key); the caller decides whether to deposit and how much.
 *
 * @example
 *   const terms = deferredTerms(req, account.address)
 *   const { payload, voucher } = await signDeferred(account, terms, { deposit: terms.needsDeposit ? 100_000n : undefined })
 */
import { randomBytes } from 'node:crypto'
import { getAddress, recoverTypedDataAddress, type Address, type Hex, type LocalAccount } from 'viem'
import {
  depositAuthorizationTypedData,
  permitTypedData,
  voucherTypedData,
  type DeferredVoucher,
} from '../schemes/deferred/typed-data.js'
import type { Requirement } from './challenge.js'

const ADDRESS_RE = /^0x[0-9a-fA-F]{40}$/
const UINT_RE = /^(0|[1-9][0-9]{0,77})$/
/** how long a deposit authorization and its permit stay valid */
const DEPOSIT_VALIDITY_SECONDS = 3600

/** The buyer's escrow account as the challenge's `extra.account` shows it. */
export interface EscrowAccountView {
  balance: bigint
  assetAllowance: bigint
  assetPermitNonce: bigint
}

/** What a deferred requirement tells its buyer, read and checked. */
export interface DeferredTerms {
  chainId: number
  escrow: Address
  seller: Address
  asset: Address
  /** the price: what the next voucher adds */
  amount: bigint
  /** the asset's EIP-712 domain, for a permit */
  token: { name: string; version: string }
  /** undefined when the seller did not send it (no PAYER-IDENTIFIER, or its read failed) */
  account: EscrowAccountView | undefined
  /** the latest voucher the seller holds from us, its signature checked; undefined: start a new id */
  latest: DeferredVoucher | undefined
}

/** True when `r` is a deferred requirement a buyer can sign for (EVM network, escrow, addresses). */
export function isPayableDeferred(r: Requirement): boolean {
  const extra = r.raw.extra as Record<string, unknown> | undefined
  return (
    r.scheme === 'deferred' &&
    r.version === 2 &&
    r.chainId !== undefined &&
    r.extra !== undefined &&
    ADDRESS_RE.test(r.asset) &&
    typeof extra?.escrow === 'string' &&
    ADDRESS_RE.test(extra.escrow)
  )
}

const big = (v: unknown): bigint | undefined =>
  typeof v === 'number' && Number.isSafeInteger(v) && v >= 0
    ? BigInt(v)
    : typeof v === 'string' && UINT_RE.test(v)
      ? BigInt(v)
      : undefined
const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

function readAccount(v: unknown): EscrowAccountView | undefined {
  if (!isObj(v)) return undefined
  const balance = big(v.balance)
  const assetAllowance = big(v.assetAllowance)
  const assetPermitNonce = big(v.assetPermitNonce)
  return balance === undefined || assetAllowance === undefined || assetPermitNonce === undefined
    ? undefined
    : { balance, assetAllowance, assetPermitNonce }
}

/**
 * The requirement's terms for `buyer`. `extra.voucher` is used only when it is ours for this
 * seller, asset, escrow and chain and `extra.signature` recovers to us: a seller cannot make us
 * aggregate onto a voucher we never signed.
 */
export async function deferredTerms(r: Requirement, buyer: Address): Promise<DeferredTerms> {
  if (!isPayableDeferred(r)) throw new TypeError('not a payable deferred requirement')
  const extra = r.raw.extra as Record<string, unknown>
  const terms: DeferredTerms = {
    chainId: r.chainId!,
    escrow: getAddress(extra.escrow as string),
    seller: getAddress(r.payTo),
    asset: getAddress(r.asset),
    amount: r.amount,
    token: r.extra!,
    account: readAccount(extra.account),
    latest: undefined,
  }
  const v = extra.voucher
  if (isObj(v) && typeof extra.signature === 'string') {
    const voucher = readVoucher(v)
    const same = (a: unknown, b: string) => typeof a === 'string' && a.toLowerCase() === b.toLowerCase()
    if (
      voucher &&
      same(voucher.buyer, buyer) &&
      same(voucher.seller, terms.seller) &&
      same(voucher.asset, terms.asset) &&
      same(voucher.escrow, terms.escrow) &&
      voucher.chainId === BigInt(terms.chainId)
    ) {
      const signer = await recoverTypedDataAddress({
        ...voucherTypedData(voucher),
        signature: extra.signature as Hex,
      }).catch(() => undefined)
      if (signer && same(signer, buyer)) terms.latest = voucher
    }
  }
  return terms
}

function readVoucher(v: Record<string, unknown>): DeferredVoucher | undefined {
  const [valueAggregate, timestamp, nonce, chainId] = [
    big(v.valueAggregate),
    big(v.timestamp),
    big(v.nonce),
    big(v.chainId),
  ]
  const addr = (x: unknown) => (typeof x === 'string' && ADDRESS_RE.test(x) ? getAddress(x) : undefined)
  const [buyer, seller, asset, escrow] = [addr(v.buyer), addr(v.seller), addr(v.asset), addr(v.escrow)]
  if (typeof v.id !== 'string' || !/^0x[0-9a-fA-F]{64}$/.test(v.id)) return undefined
  if (
    valueAggregate === undefined ||
    timestamp === undefined ||
    nonce === undefined ||
    chainId === undefined ||
    !buyer ||
    !seller ||
    !asset ||
    !escrow
  )
    return undefined
  return { id: v.id as Hex, buyer, seller, valueAggregate, asset, timestamp, nonce, escrow, chainId }
}

/**
 * The voucher after `previous` (same id, nonce + 1, aggregate + the price, a later timestamp), or
 * a new voucher id carrying the price.
 */
export function nextVoucher(
  t: DeferredTerms,
  buyer: Address,
  previous: DeferredVoucher | undefined,
  nowSeconds: number,
): DeferredVoucher {
  const now = BigInt(nowSeconds)
  return {
    id: previous?.id ?? (`0x${randomBytes(32).toString('hex')}` as Hex),
    buyer: getAddress(buyer),
    seller: t.seller,
    valueAggregate: (previous?.valueAggregate ?? 0n) + t.amount,
    asset: t.asset,
    timestamp: previous && previous.timestamp >= now ? previous.timestamp + 1n : now,
    nonce: previous ? previous.nonce + 1n : 0n,
    escrow: t.escrow,
    chainId: BigInt(t.chainId),
  }
}

/** A voucher as JSON on the wire: the spec's forms (uints as numbers while safe, the aggregate a string). */
export function voucherWire(v: DeferredVoucher): Record<string, unknown> {
  const num = (x: bigint) => (x <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(x) : x.toString())
  return {
    id: v.id,
    buyer: v.buyer,
    seller: v.seller,
    valueAggregate: v.valueAggregate.toString(),
    asset: v.asset,
    timestamp: num(v.timestamp),
    nonce: num(v.nonce),
    escrow: v.escrow,
    chainId: num(v.chainId),
  }
}

export interface SignedDeferred {
  /** the scheme `payload`: `{voucher, signature, deposit?}` */
  payload: Record<string, unknown>
  voucher: DeferredVoucher
  /** the amount the payload deposits, when it does */
  deposit: bigint | undefined
}

/**
 * Signs the next voucher for `t` (onto `previous`, default `t.latest`) and, when `o.deposit` is
 * set, a deposit of that amount (with a permit while `t.account` shows the allowance short, or
 * does not show it).
 */
export async function signDeferred(
  account: LocalAccount,
  t: DeferredTerms,
  o: { deposit?: bigint; previous?: DeferredVoucher; nowSeconds?: number } = {},
): Promise<SignedDeferred> {
  const now = o.nowSeconds ?? Math.floor(Date.now() / 1000)
  const voucher = nextVoucher(t, account.address, o.previous ?? t.latest, now)
  const payload: Record<string, unknown> = {
    voucher: voucherWire(voucher),
    signature: await account.signTypedData(voucherTypedData(voucher)),
  }
  if (o.deposit !== undefined && o.deposit > 0n) payload.deposit = await signDeposit(account, t, o.deposit, now)
  return { payload, voucher, deposit: o.deposit !== undefined && o.deposit > 0n ? o.deposit : undefined }
}

/** A `deposit` of `amount` for the payload (or for the escrow directly): the DepositAuthorization, and a permit while the allowance is short. */
export async function signDeposit(
  account: LocalAccount,
  t: Pick<DeferredTerms, 'seller' | 'asset' | 'escrow' | 'chainId' | 'token' | 'account'>,
  amount: bigint,
  now: number,
): Promise<Record<string, unknown>> {
  const expiry = BigInt(now + DEPOSIT_VALIDITY_SECONDS)
  const auth = {
    buyer: account.address,
    seller: t.seller,
    asset: t.asset,
    amount,
    nonce: `0x${randomBytes(32).toString('hex')}` as Hex,
    expiry,
  }
  const deposit: Record<string, unknown> = {
    authorization: {
      ...auth,
      amount: amount.toString(),
      expiry: Number(expiry),
      signature: await account.signTypedData(depositAuthorizationTypedData(auth, t.chainId, t.escrow)),
    },
  }
  // no allowance shown: a permit, with the nonce the seller showed (0 when it showed none)
  if (!t.account || t.account.assetAllowance < amount) {
    const permit = {
      owner: account.address,
      spender: t.escrow,
      value: amount,
      nonce: t.account?.assetPermitNonce ?? 0n,
      deadline: expiry,
    }
    deposit.permit = {
      owner: permit.owner,
      spender: permit.spender,
      value: amount.toString(),
      nonce: permit.nonce.toString(),
      deadline: Number(expiry),
      domain: t.token,
      signature: await account.signTypedData(
        permitTypedData(permit, { ...t.token, chainId: t.chainId, address: t.asset }),
      ),
    }
  }
  return deposit
}

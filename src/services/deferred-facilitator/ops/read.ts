/**
 * The deferred facilitator's read operations: a buyer's escrow account with its latest voucher for
 * a seller, the voucher to aggregate onto, and one stored voucher. Nothing they show is secret
 * (it all ends up on chain).
 */
import type { Address } from 'viem'
import { voucherJson } from '../../../schemes/deferred/deferred-scheme.js'
import { voucherOfRow } from '../../../schemes/deferred/voucher-store.js'
import {
  address,
  answer,
  badParams,
  BYTES32,
  NONCE,
  UINT,
  wrongEscrow,
  type FacilitatorAnswer,
  type FacilitatorContext,
} from '../context.js'

/** GET /deferred/buyers/:buyer?seller&asset&escrow&chainId */
export async function buyerAccount(
  ctx: FacilitatorContext,
  pathBuyer: string,
  q: Record<string, string | undefined>,
): Promise<FacilitatorAnswer> {
  const buyer = address(pathBuyer)
  if (!buyer) return badParams('buyer (in the path) must be a 0x address')
  for (const p of ['seller', 'asset', 'escrow', 'chainId'])
    if (q[p] === undefined || q[p] === '') return badParams(`${p} is required`)
  const seller = address(q.seller)
  const asset = address(q.asset)
  if (!seller) return badParams('seller must be a 0x address')
  if (!asset) return badParams('asset must be a 0x address')
  if (!UINT.test(q.chainId!)) return badParams('chainId must be an integer')
  const wrong = wrongEscrow(ctx, q.escrow, q.chainId)
  if (wrong) return badParams(wrong)
  const [account, latest] = await Promise.all([
    ctx.reader.account(buyer, seller, asset),
    ctx.store.latest({ escrow: ctx.escrow, buyer, seller, asset }, BigInt(ctx.chainId)),
  ])
  return answer(200, {
    balance: account.balance.toString(),
    assetAllowance: account.assetAllowance.toString(),
    assetPermitNonce: account.assetPermitNonce.toString(),
    ...(latest ? { voucher: { ...voucherJson(latest.voucher), signature: latest.signature } } : {}),
  })
}

/** GET /deferred/vouchers/available/:buyer/:seller (the platform's asset) */
export async function availableVoucher(
  ctx: FacilitatorContext,
  pathBuyer: string,
  pathSeller: string,
): Promise<FacilitatorAnswer> {
  const buyer = address(pathBuyer)
  const seller = address(pathSeller)
  if (!buyer) return badParams('buyer (in the path) must be a 0x address')
  if (!seller) return badParams('seller (in the path) must be a 0x address')
  const asset = ctx.deps.config.chain.usdc.address.toLowerCase() as Address
  const latest = await ctx.store.latest({ escrow: ctx.escrow, buyer, seller, asset }, BigInt(ctx.chainId))
  if (!latest) return answer(404, { error: 'No vouchers exist for this buyer and seller' })
  return answer(200, { voucher: voucherJson(latest.voucher), signature: latest.signature })
}

/** GET /deferred/vouchers/:id/:nonce */
export async function storedVoucher(ctx: FacilitatorContext, id: string, nonce: string): Promise<FacilitatorAnswer> {
  if (!BYTES32.test(id)) return badParams('id must be 32 bytes of 0x hex')
  if (!NONCE.test(nonce)) return badParams('nonce must be a non-negative integer')
  const r = await ctx.deps.db
    .selectFrom('deferred_vouchers')
    .selectAll()
    .where('escrow', '=', ctx.escrow)
    .where('voucher_id', '=', id.toLowerCase())
    .where('nonce', '=', nonce)
    .executeTakeFirst()
  if (!r) return answer(404, { error: 'Voucher not found' })
  return answer(200, {
    voucher: voucherJson(voucherOfRow(r, BigInt(ctx.chainId))),
    signature: r.signature,
  })
}

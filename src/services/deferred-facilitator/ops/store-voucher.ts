/**
 * POST /deferred/vouchers: stores a buyer's voucher for one of this platform's sellers, verified
 * and reserved exactly as the proxy's hot path does a call's (the deferred scheme's verify and
 * reserve: signature, continuity onto the stored head, escrow balance, deposit executed first).
 * Every refusal has the spec's verify shape (`isValid: false`, `invalidReason`, `invalidMessage`).
 */
import type { FastifyBaseLogger } from 'fastify'
import { sql } from 'kysely'
import { getAddress, type Address, type Hex } from 'viem'
import { isRefusal } from '../../../proxy/paid-call/refusal.js'
import { voucherJson } from '../../../schemes/deferred/deferred-scheme.js'
import type { DeferredVoucher } from '../../../schemes/deferred/typed-data.js'
import type { Challenge } from '../../../x402/challenge.js'
import type { PaymentEnvelope } from '../../../x402/decode-payment.js'
import type { NetworkV2 } from '../../../x402/types.js'
import { address, answer, isObj, type FacilitatorAnswer, type FacilitatorContext } from '../context.js'

/** the spec's 400 for POST /vouchers: a verify response */
const invalid = (invalidReason: string, invalidMessage: string, payer?: unknown) =>
  answer(400, {
    isValid: false,
    invalidReason,
    invalidMessage,
    ...(address(payer) ? { payer: getAddress(address(payer)!) } : {}),
  })

/** a request checked for shape: the requirement's payee and amount, the payload, the voucher's buyer */
interface VoucherRequest {
  pr: Record<string, unknown>
  payload: Record<string, unknown>
  payTo: Address
  amountText: string
  buyer: unknown
}

/** the body checked for shape against this facilitator's chain and asset; or the refusal */
function readVoucherRequest(ctx: FacilitatorContext, body: unknown): VoucherRequest | FacilitatorAnswer {
  const { chain } = ctx.deps.config
  if (!isObj(body)) return invalid('invalid_payload', 'the body must be a JSON object')
  const { paymentPayload: pp, paymentRequirements: pr } = body
  if (!isObj(pp)) return invalid('invalid_payload', 'paymentPayload is required (an object)')
  if (!isObj(pr)) return invalid('invalid_payment_requirements', 'paymentRequirements is required (an object)')
  const payload = pp.payload
  const buyer = isObj(payload) && isObj(payload.voucher) ? payload.voucher.buyer : undefined
  const requirement = (message: string) => invalid('invalid_payment_requirements', message, buyer)
  if (pp.scheme !== 'deferred' || pr.scheme !== 'deferred')
    return invalid(
      'unsupported_scheme',
      'paymentPayload.scheme and paymentRequirements.scheme must be "deferred"',
      buyer,
    )
  const networkOk = (n: unknown) => n === chain.network || n === chain.caip2
  if (!networkOk(pp.network) || !networkOk(pr.network))
    return invalid(
      'invalid_network',
      `network must be ${chain.network} or ${chain.caip2} (this facilitator's chain)`,
      buyer,
    )
  if (!isObj(payload)) return invalid('invalid_payload', 'paymentPayload.payload is required (an object)', buyer)
  // the requirement: v2 `payTo` or the spec's `recipient`; v2 `amount` or v1 `maxAmountRequired`
  const payTo = address(pr.payTo ?? pr.recipient)
  const amountText = pr.amount ?? pr.maxAmountRequired
  if (!payTo) return requirement('paymentRequirements.recipient (or payTo) must be a 0x address')
  if (typeof amountText !== 'string' || !/^[1-9]\d{0,76}$/.test(amountText))
    return requirement('paymentRequirements.amount must be a positive integer string (atomic units)')
  const usdc = chain.usdc.address.toLowerCase() as Address
  if (address(pr.asset) !== usdc)
    return requirement(`paymentRequirements.asset must be ${getAddress(usdc)} (this facilitator's asset)`)
  return { pr, payload, payTo, amountText, buyer }
}

/** whether the payee offers `deferred` on one of its enabled endpoints here */
async function offersDeferred(ctx: FacilitatorContext, payTo: Address): Promise<boolean> {
  const offered = await ctx.deps.db
    .selectFrom('endpoints')
    .innerJoin('services', 'services.id', 'endpoints.service_id')
    .select('endpoints.id')
    .where(sql<boolean>`lower(services.pay_to) = ${payTo}`)
    .where(sql<boolean>`'deferred' = any(endpoints.schemes)`)
    .where('endpoints.enabled', '=', true)
    .limit(1)
    .executeTakeFirst()
  return offered !== undefined
}

/**
 * The spec's facilitator text names the deposit `depositAuthorization {permit?, depositAuthorization}`;
 * the scheme's (and our decoder's) `deposit {authorization, permit?}`: both are read.
 */
function schemePayload(payload: Record<string, unknown>): Record<string, unknown> {
  if (!isObj(payload.depositAuthorization) || payload.deposit !== undefined) return payload
  const { depositAuthorization: da, ...rest } = payload as { depositAuthorization: Record<string, unknown> }
  return { ...rest, deposit: { authorization: da.depositAuthorization, ...(da.permit ? { permit: da.permit } : {}) } }
}

/** the terms and the payment as the proxy's challenge and header would carry them: verify compares the two */
function asProxyCall(ctx: FacilitatorContext, req: VoucherRequest) {
  const { config } = ctx.deps
  const usdc = config.chain.usdc.address.toLowerCase() as Address
  const terms = {
    amount: BigInt(req.amountText),
    payTo: req.payTo,
    asset: usdc,
    networkV1: config.chain.network,
    networkV2: config.chain.caip2 as NetworkV2,
    chainId: ctx.chainId,
    token: { name: config.chain.usdc.name, version: config.chain.usdc.version },
    maxTimeoutSeconds: config.x402.maxTimeoutSeconds,
  }
  const { pr } = req
  const envelope: PaymentEnvelope = {
    ok: true,
    version: 2,
    scheme: 'deferred',
    network: terms.networkV2,
    accepted: {
      scheme: 'deferred',
      network: terms.networkV2,
      amount: req.amountText,
      asset: getAddress(usdc),
      payTo: getAddress(req.payTo),
      maxTimeoutSeconds: terms.maxTimeoutSeconds,
      extra: { escrow: isObj(pr.extra) && typeof pr.extra.escrow === 'string' ? pr.extra.escrow : ctx.escrow },
    },
    payload: schemePayload(req.payload),
  }
  return { challenge: { terms } as unknown as Challenge, envelope }
}

/** a refusal of verify or reserve, in the verify shape (a 5xx of the scheme's is a 503) */
function schemeRefusal(
  r: { reason?: string; message?: string; error?: { message: string; statusCode: number } },
  buyer: unknown,
): FacilitatorAnswer {
  if (!r.error) return invalid(r.reason ?? 'invalid_payload', r.message ?? r.reason ?? 'refused', buyer)
  return answer(r.error.statusCode >= 500 ? 503 : r.error.statusCode, {
    isValid: false,
    invalidReason: 'unexpected_verify_error',
    invalidMessage: r.error.message,
    ...(address(buyer) ? { payer: getAddress(address(buyer)!) } : {}),
  })
}

export async function storeVoucher(
  ctx: FacilitatorContext,
  body: unknown,
  log: FastifyBaseLogger,
): Promise<FacilitatorAnswer> {
  const req = readVoucherRequest(ctx, body)
  if ('status' in req) return req
  if (!(await offersDeferred(ctx, req.payTo)))
    return invalid(
      'invalid_payment_requirements',
      `${getAddress(req.payTo)} offers no deferred endpoint on this platform: this facilitator stores vouchers for its own sellers only`,
      req.buyer,
    )
  const { challenge, envelope } = asProxyCall(ctx, req)
  const callCtx = { nowMs: Date.now(), callMs: 0, log }
  const verified = await ctx.scheme.verify(envelope, challenge, callCtx)
  if (isRefusal(verified)) return schemeRefusal(verified, req.buyer)
  const held = await ctx.scheme.reserve(verified, callCtx)
  if (isRefusal(held)) return schemeRefusal(held, req.buyer)
  const p = verified as typeof verified & { voucher: DeferredVoucher; signature: Hex; digest: Hex }
  let stored = false
  try {
    stored = await ctx.store.storeAlone(p.voucher, p.signature, p.digest)
  } catch (err) {
    await held.release()
    log.error({ err: (err as Error).message }, 'deferred voucher could not be stored')
    return answer(
      503,
      {
        isValid: false,
        invalidReason: 'unexpected_verify_error',
        invalidMessage: 'the voucher store could not be written now; retry shortly',
        payer: getAddress(p.voucher.buyer),
      },
      { 'retry-after': '1' },
    )
  }
  if (stored) return answer(201, { ...voucherJson(p.voucher), signature: p.signature })
  await held.release()
  return invalid(
    'invalid_deferred_evm_payload_voucher_stale',
    `voucher ${p.voucher.id} nonce ${p.voucher.nonce} is stored already, or a later nonce of its id is`,
    req.buyer,
  )
}

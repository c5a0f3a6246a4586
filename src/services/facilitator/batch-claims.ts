/**
 * What the facilitator's batch-settlement actions share (./batch-settle.ts, ./batch-refund.ts):
 * the server's `claims[]` read with the scheme's payload reader, the rule that the platform's
 * receiverAuthorizer acts only on the channels a seller opened here with its own key, and the
 * authorizer signature (the server's, or the platform key's for channels that name it).
 */
import type { Hex } from 'viem'
import type { AuthorizerSigner } from '../../chain/batch-settlement/authorizer.js'
import type { VoucherClaimInput } from '../../chain/batch-settlement/calldata.js'
import { decodeBatchPayload } from '../../schemes/batch-settlement/payload.js'
import { channelIdOf } from '../../schemes/batch-settlement/typed-data.js'
import type { ReasonCode } from '../../x402/reasons.js'
import type { BatchFacilitatorContext } from './batch.js'
import { batchFailure } from './batch-send.js'
import { SettleRefusal } from './exact-settle.js'

type Obj = Record<string, unknown>

const MAX_CLAIMS = 200
const ZERO32 = `0x${'0'.repeat(64)}`
const SIGNATURE = /^0x([0-9a-fA-F]{2}){65,}$/
const UINT = /^(0|[1-9][0-9]{0,37})$/
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v)
export const refused = (network: string, reason: ReasonCode, detail?: string, payer?: string) =>
  new SettleRefusal(200, batchFailure(network, reason, detail, payer))

/** One claim of a `claim` (or `refund`) payload, its channel id computed. */
export interface ClaimInput extends VoucherClaimInput {
  channelId: Hex
}

/** `claims[]` as the official server builds them, each read with the scheme's payload reader. */
export function readClaims(x: BatchFacilitatorContext, v: unknown): ClaimInput[] | string {
  if (!Array.isArray(v) || v.length > MAX_CLAIMS) return `payload.claims must be an array of at most ${MAX_CLAIMS}`
  const out: ClaimInput[] = []
  for (const [i, c] of v.entries()) {
    const voucher = isObj(c) && isObj(c.voucher) ? c.voucher : {}
    const d = decodeBatchPayload({
      type: 'voucher',
      channelConfig: voucher.channel,
      voucher: { channelId: ZERO32, maxClaimableAmount: voucher.maxClaimableAmount, signature: (c as Obj)?.signature },
    })
    const total = isObj(c) ? c.totalClaimed : undefined
    if (!d.ok) return `payload.claims[${i}]: ${d.detail.replace('payload.channelConfig', 'voucher.channel')}`
    if (typeof total !== 'string' || !UINT.test(total))
      return `payload.claims[${i}].totalClaimed must be a uint128 string`
    const b = d.payload
    out.push({
      config: b.config,
      channelId: channelIdOf(x.domain, b.config),
      maxClaimableAmount: b.maxClaimable,
      signature: b.signature,
      totalClaimed: BigInt(total),
    })
  }
  return out
}

/** undefined when every channel's deposit was settled here with this user's key */
export async function notYours(x: BatchFacilitatorContext, userId: string, channelIds: readonly string[]) {
  const ids = [...new Set(channelIds)]
  if (ids.length === 0) return undefined
  const mine = await x.db
    .selectFrom('facilitator_batch_channels')
    .select('channel_id')
    .where('channel_id', 'in', ids)
    .where('user_id', '=', userId)
    .execute()
  const own = new Set(mine.map((r) => r.channel_id))
  const other = ids.find((id) => !own.has(id))
  return other ? `channel ${other}` : undefined
}

/** the server's authorizer signature, or the platform key's when the channels name it */
export async function authorize(
  x: BatchFacilitatorContext,
  given: unknown,
  authorizers: readonly string[],
  sign: (s: AuthorizerSigner) => Promise<Hex>,
): Promise<Hex | ReasonCode> {
  if (given !== undefined)
    return typeof given === 'string' && SIGNATURE.test(given)
      ? (given as Hex)
      : 'invalid_batch_settlement_evm_payload_type'
  const signer = await x.authorizer().catch(() => undefined)
  if (!signer) return 'invalid_batch_settlement_evm_authorizer_not_configured'
  const ours = signer.address.toLowerCase()
  if (authorizers.some((a) => a !== ours)) return 'invalid_batch_settlement_evm_authorizer_address_mismatch'
  return sign(signer)
}

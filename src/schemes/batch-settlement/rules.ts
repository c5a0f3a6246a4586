/**
 * The spec's verification rules that need no state ("Verification Rules" 1 to 5, and the
 * withdrawal-delay bounds): the payload's channel config against its claimed id and against the
 * endpoint's requirement. Pure; the rules on channel state (7, 9, 10) run with the reservation
 * (channel-state.ts), the signature (6) in signature.ts.
 */
import { getAddress } from 'viem'
import type { ReasonCode } from '../../x402/reasons.js'
import { MAX_WITHDRAW_DELAY, MIN_WITHDRAW_DELAY } from './constants.js'
import type { BatchPayload } from './payload.js'
import { channelIdOf } from './typed-data.js'

/** What the endpoint's requirement fixes of a channel (lower-case addresses). */
export interface ChannelTerms {
  asset: `0x${string}`
  payTo: `0x${string}`
  receiverAuthorizer: `0x${string}`
  withdrawDelay: number
}

export interface RuleBreak {
  reason: ReasonCode
  detail: string
}

/** undefined when the channel config fits its id and the terms; else the first rule it breaks. */
export function checkChannelTerms(p: BatchPayload, t: ChannelTerms, domain: Uint8Array): RuleBreak | undefined {
  const c = p.config
  const id = channelIdOf(domain, c)
  if (id !== p.channelId)
    return {
      reason: 'invalid_batch_settlement_evm_channel_id_mismatch',
      detail: `channelConfig hashes to ${id}, voucher.channelId is ${p.channelId}`,
    }
  if (c.token !== t.asset)
    return { reason: 'invalid_batch_settlement_evm_token_mismatch', detail: `expected ${getAddress(t.asset)}` }
  if (c.receiver !== t.payTo)
    return { reason: 'invalid_batch_settlement_evm_receiver_mismatch', detail: `expected ${getAddress(t.payTo)}` }
  if (c.receiverAuthorizer !== t.receiverAuthorizer)
    return {
      reason: 'invalid_batch_settlement_evm_receiver_authorizer_mismatch',
      detail: `expected ${getAddress(t.receiverAuthorizer)}`,
    }
  if (c.withdrawDelay < MIN_WITHDRAW_DELAY || c.withdrawDelay > MAX_WITHDRAW_DELAY)
    return { reason: 'invalid_batch_settlement_evm_withdraw_delay_out_of_range', detail: `got ${c.withdrawDelay}` }
  if (c.withdrawDelay !== t.withdrawDelay)
    return {
      reason: 'invalid_batch_settlement_evm_withdraw_delay_mismatch',
      detail: `expected ${t.withdrawDelay}, got ${c.withdrawDelay}`,
    }
  return undefined
}

/**
 * The cumulative rules against the server's channel state (the spec's "Request Processing" 1 and
 * rules 7, 9, 10), in the order the Redis script applies them (channel-state.ts mirrors this for
 * one round trip; this is the reference the unit tests pin).
 */
export function checkCumulative(
  p: Pick<BatchPayload, 'type' | 'maxClaimable'> & { depositAmount: bigint },
  s: { charged: bigint; balance: bigint; totalClaimed: bigint },
  amount: bigint,
): ReasonCode | undefined {
  const expected = p.type === 'refund' ? s.charged : s.charged + amount
  if (p.maxClaimable !== expected) return 'invalid_batch_settlement_evm_cumulative_amount_mismatch'
  if (s.balance === 0n && p.depositAmount === 0n) return 'invalid_batch_settlement_evm_channel_not_found'
  if (p.maxClaimable > s.balance + p.depositAmount) return 'invalid_batch_settlement_evm_cumulative_exceeds_balance'
  const below = p.type === 'voucher' ? p.maxClaimable <= s.totalClaimed : p.maxClaimable < s.totalClaimed
  if (below) return 'invalid_batch_settlement_evm_cumulative_below_claimed'
  return undefined
}

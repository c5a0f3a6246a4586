/**
 * `POST /facilitator/settle` of a batch-settlement `refund`, as the official server sends it (its
 * `enrichSettlementPayload` or its channel manager's `refund`): the channel config and latest
 * voucher, the amount, the channel's `refundNonce`, the claim of what was charged and not claimed
 * yet, and the authorizer signatures, or none where the platform's receiverAuthorizer signs (for a
 * channel the seller opened here with its own key). One `multicall` (claim, then
 * `refundWithSignature`) or the refund alone; the answer carries the channel after it.
 */
import { getAddress, type Hex } from 'viem'
import { BATCH_SETTLEMENT_ADDRESS } from '../../chain/batch-settlement/addresses.js'
import { signClaimBatch, signRefund } from '../../chain/batch-settlement/authorizer.js'
import {
  claimEntries,
  encodeClaimWithSignature,
  encodeMulticall,
  encodeRefundWithSignature,
} from '../../chain/batch-settlement/calldata.js'
import { readChannel, type OnchainChannel } from '../../chain/batch-settlement/channel.js'
import { decodeBatchPayload } from '../../schemes/batch-settlement/payload.js'
import { channelIdOf } from '../../schemes/batch-settlement/typed-data.js'
import type { ReasonCode } from '../../x402/reasons.js'
import { channelStateExtra, type BatchFacilitatorContext } from './batch.js'
import { authorize, notYours, readClaims, refused } from './batch-claims.js'
import { sendOnce } from './batch-send.js'
import type { SettleAnswer, SettleRefusal } from './exact-settle.js'
import type { FacilitatorCall } from './request.js'

const UINT = /^(0|[1-9][0-9]{0,77})$/

export async function settleRefund(
  x: BatchFacilitatorContext,
  call: FacilitatorCall,
  userId: string,
): Promise<SettleAnswer | SettleRefusal> {
  const network = call.requirements.network
  const p = call.envelope.payload as Record<string, unknown>
  const d = decodeBatchPayload(p)
  if (!d.ok) return refused(network, d.reason, d.detail)
  const b = d.payload
  const payer = getAddress(b.config.payer)
  if (channelIdOf(x.domain, b.config) !== b.channelId)
    return refused(network, 'invalid_batch_settlement_evm_channel_id_mismatch', undefined, payer)
  if (b.config.token !== x.usdc) return refused(network, 'invalid_batch_settlement_evm_token_mismatch')
  if (b.refundAmount === undefined || typeof p.refundNonce !== 'string' || !UINT.test(p.refundNonce))
    return refused(network, 'invalid_batch_settlement_evm_refund_payload', 'amount and refundNonce are required')
  const claims = readClaims(x, p.claims ?? [])
  if (typeof claims === 'string') return refused(network, 'invalid_batch_settlement_evm_refund_payload', claims)
  const foreign = await notYours(x, userId, [b.channelId, ...claims.map((c) => c.channelId)])
  if (foreign) return refused(network, 'facilitator_channel_not_yours', foreign, payer)
  const refund = { channelId: b.channelId, nonce: BigInt(p.refundNonce), amount: b.refundAmount }
  const chainId = x.config.chain.chainId
  const authorizer = [b.config.receiverAuthorizer]
  const refundSig = await authorize(x, p.refundAuthorizerSignature, authorizer, (s) => signRefund(s, chainId, refund))
  if (!refundSig.startsWith('0x')) return refused(network, refundSig as ReasonCode, undefined, payer)
  const ids = claims.map((c) => c.channelId)
  const claimSig =
    claims.length === 0
      ? '0x'
      : await authorize(
          x,
          p.claimAuthorizerSignature,
          claims.map((c) => c.config.receiverAuthorizer),
          (s) => signClaimBatch(s, chainId, claimEntries(claims, ids)),
        )
  if (!claimSig.startsWith('0x')) return refused(network, claimSig as ReasonCode, undefined, payer)
  const refundCall = encodeRefundWithSignature(b.config, refund.amount, refund.nonce, refundSig as Hex)
  let before: OnchainChannel
  try {
    before = await readChannel(x.chain, b.channelId)
  } catch {
    return refused(network, 'invalid_batch_settlement_evm_rpc_read_failed', undefined, payer)
  }
  return sendOnce(x, userId, {
    key: {
      action: 'refund',
      network,
      asset: x.usdc,
      payer: b.config.payer,
      payTo: b.config.receiver,
      value: refund.amount,
      nonce: `refund:${b.channelId}:${refund.nonce}`,
      signature: refundSig.toLowerCase(),
    },
    tx: {
      to: BATCH_SETTLEMENT_ADDRESS,
      data:
        claims.length === 0
          ? refundCall
          : encodeMulticall([encodeClaimWithSignature(claims, claimSig as Hex), refundCall]),
    },
    simulationFailed: 'invalid_batch_settlement_evm_refund_simulation_failed',
    transactionFailed: 'invalid_batch_settlement_evm_refund_transaction_failed',
    succeeded: async (receipt) => {
      const after = await readChannel(x.chain, b.channelId)
      const amount = before.balance > after.balance ? before.balance - after.balance : 0n
      return {
        success: true,
        transaction: receipt.transactionHash,
        network,
        payer,
        amount: amount.toString(),
        extra: { channelState: channelStateExtra(b.channelId, after) },
      }
    },
  })
}

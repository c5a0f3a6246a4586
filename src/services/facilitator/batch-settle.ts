/**
 * `POST /facilitator/settle` for `batch-settlement`: what the official server scheme sends its
 * facilitator (`@x402/evm/batch-settlement/server`: a deposit when a channel opens or tops up, then
 * its channel manager's `claim`, `settle` and `refund`; a voucher it settles itself):
 *
 * - deposit: the checks of verify (./batch.ts), then `deposit` through the ERC-3009 collector from
 *   a platform relayer; the channel becomes the seller's (its key asked: `facilitator_batch_channels`),
 *   the answer carries the channel's state after it (`extra.channelState`).
 * - claim: `claimWithSignature` of the seller's channels; without the server's
 *   `claimAuthorizerSignature` the platform's receiverAuthorizer key signs the ClaimBatch, for
 *   channels whose config names it and whose deposit this seller settled here, never others.
 * - settle: `settle(receiver, token)` for a receiver of the seller's channels, the amount from the
 *   `Settled` event.
 * - refund: `refundWithSignature` (after the server's claim of the channel, in one `multicall`),
 *   signed as a claim is; the answer carries the channel after it.
 *
 * Each is sent once (./batch-send.ts): a repeat answers the first one's response.
 */
import { encodeAbiParameters, getAddress, keccak256, parseEventLogs, type Address, type Hex } from 'viem'
import { batchSettlementAbi } from '../../chain/batch-settlement/abi.js'
import { BATCH_SETTLEMENT_ADDRESS } from '../../chain/batch-settlement/addresses.js'
import { signClaimBatch } from '../../chain/batch-settlement/authorizer.js'
import { claimEntries, encodeClaimWithSignature, encodeSettle } from '../../chain/batch-settlement/calldata.js'
import { readChannel, readChannels } from '../../chain/batch-settlement/channel.js'
import { depositCalldata } from '../../schemes/batch-settlement/chain.js'
import { depositNonce } from '../../schemes/batch-settlement/deposit.js'
import { decodeBatchPayload, type BatchPayload } from '../../schemes/batch-settlement/payload.js'
import type { ReasonCode } from '../../x402/reasons.js'
import { checkBatch, channelStateExtra, wrongChainOrToken, type BatchFacilitatorContext } from './batch.js'
import { authorize, notYours, readClaims, refused } from './batch-claims.js'
import { settleRefund } from './batch-refund.js'
import { firstAnswer, sendOnce, type BatchSend } from './batch-send.js'
import { SettleRefusal, type SettleAnswer } from './exact-settle.js'
import type { FacilitatorCall } from './request.js'

type Answer = Promise<SettleAnswer | SettleRefusal>
type Obj = Record<string, unknown>
const ADDRESS = /^0x[0-9a-fA-F]{40}$/

/** A deposit's transaction: sent once, the channel bound to the seller first. */
function depositSend(x: BatchFacilitatorContext, userId: string, b: BatchPayload, network: string): BatchSend {
  const d = b.deposit!
  const payer = getAddress(b.config.payer)
  return {
    key: {
      action: 'deposit',
      network,
      asset: b.config.token,
      payer: b.config.payer,
      payTo: b.config.receiver,
      value: d.amount,
      nonce: depositNonce(b.channelId, d.salt),
      signature: d.signature,
    },
    tx: { to: BATCH_SETTLEMENT_ADDRESS, data: depositCalldata(b.config, d) },
    simulationFailed: 'invalid_batch_settlement_evm_deposit_simulation_failed',
    transactionFailed: 'invalid_batch_settlement_evm_deposit_transaction_failed',
    beforeSend: () => bindChannel(x, userId, b, network),
    succeeded: async (receipt) => {
      const channelState = channelStateExtra(b.channelId, await readChannel(x.chain, b.channelId))
      const amount = d.amount.toString()
      return { success: true, transaction: receipt.transactionHash, network, payer, amount, extra: { channelState } }
    },
  }
}

async function settleDeposit(x: BatchFacilitatorContext, call: FacilitatorCall, userId: string, nowMs: number): Answer {
  const network = call.requirements.network
  // a repeat of a deposit settled here: its first answer (its authorization is used now)
  const sent = decodeBatchPayload(call.envelope.payload)
  if (sent.ok && sent.payload.deposit) {
    const first = await firstAnswer(x, userId, depositSend(x, userId, sent.payload, network))
    if (first) return first
  }
  const c = await checkBatch(x, call, nowMs)
  if ('ok' in c) return refused(network, c.reason, undefined, c.payer)
  if (!c.batch.deposit) {
    const payer = getAddress(c.batch.config.payer)
    return refused(network, 'invalid_batch_settlement_evm_payload_type', 'a voucher is settled by its server', payer)
  }
  return sendOnce(x, userId, depositSend(x, userId, c.batch, network))
}

/** the channel becomes this user's; refused when another user's or the platform's own */
async function bindChannel(x: BatchFacilitatorContext, userId: string, b: BatchPayload, network: string) {
  const platform = await x.db
    .selectFrom('batch_channels')
    .select('channel_id')
    .where('channel_id', '=', b.channelId)
    .executeTakeFirst()
  if (platform) return refused(network, 'facilitator_channel_not_yours', 'a channel of the platform')
  await x.db
    .insertInto('facilitator_batch_channels')
    .values({
      channel_id: b.channelId,
      network,
      user_id: userId,
      receiver: b.config.receiver,
      token: b.config.token,
      receiver_authorizer: b.config.receiverAuthorizer,
    })
    .onConflict((oc) => oc.column('channel_id').doNothing())
    .execute()
  const owner = await x.db
    .selectFrom('facilitator_batch_channels')
    .select('user_id')
    .where('channel_id', '=', b.channelId)
    .executeTakeFirstOrThrow()
  return owner.user_id === userId
    ? undefined
    : refused(network, 'facilitator_channel_not_yours', `channel ${b.channelId}`)
}

async function settleClaims(x: BatchFacilitatorContext, call: FacilitatorCall, userId: string): Answer {
  const network = call.requirements.network
  const p = call.envelope.payload as Obj
  const claims = readClaims(x, p.claims)
  if (typeof claims === 'string') return refused(network, 'invalid_batch_settlement_evm_payload_type', claims)
  if (claims.length === 0)
    return refused(network, 'invalid_batch_settlement_evm_payload_type', 'payload.claims is empty')
  if (claims.some((c) => c.config.token !== x.usdc))
    return refused(network, 'invalid_batch_settlement_evm_token_mismatch')
  const ids = claims.map((c) => c.channelId)
  const foreign = await notYours(x, userId, ids)
  if (foreign) return refused(network, 'facilitator_channel_not_yours', foreign)
  const entries = claimEntries(claims, ids)
  const sig = await authorize(
    x,
    p.claimAuthorizerSignature,
    claims.map((c) => c.config.receiverAuthorizer.toLowerCase()),
    (s) => signClaimBatch(s, x.config.chain.chainId, entries),
  )
  if (!sig.startsWith('0x')) return refused(network, sig as ReasonCode)
  let before
  try {
    before = await readChannels(x.chain, ids)
  } catch {
    return refused(network, 'invalid_batch_settlement_evm_rpc_read_failed')
  }
  const value = claims.reduce(
    (sum, c, i) => sum + (c.totalClaimed > before[i]!.totalClaimed ? c.totalClaimed - before[i]!.totalClaimed : 0n),
    0n,
  )
  const receiver = claims[0]!.config.receiver.toLowerCase()
  const nonce = keccak256(
    encodeAbiParameters([{ type: 'bytes32[]' }, { type: 'uint128[]' }], [ids, claims.map((c) => c.totalClaimed)]),
  )
  return sendOnce(x, userId, {
    key: {
      action: 'claim',
      network,
      asset: x.usdc,
      payer: receiver,
      payTo: receiver,
      value,
      nonce,
      signature: (sig as string).toLowerCase(),
    },
    tx: { to: BATCH_SETTLEMENT_ADDRESS, data: encodeClaimWithSignature(claims, sig as Hex) },
    simulationFailed: 'invalid_batch_settlement_evm_claim_simulation_failed',
    transactionFailed: 'invalid_batch_settlement_evm_claim_transaction_failed',
    succeeded: async (receipt) => ({ success: true, transaction: receipt.transactionHash, network }),
  })
}

async function settleReceiver(x: BatchFacilitatorContext, call: FacilitatorCall, userId: string): Answer {
  const network = call.requirements.network
  const p = call.envelope.payload as Obj
  if (
    typeof p.receiver !== 'string' ||
    !ADDRESS.test(p.receiver) ||
    typeof p.token !== 'string' ||
    !ADDRESS.test(p.token)
  )
    return refused(
      network,
      'invalid_batch_settlement_evm_payload_type',
      'payload.receiver and payload.token must be addresses',
    )
  const wrong = wrongChainOrToken(x, network, p.token)
  if (wrong) return refused(network, wrong.reason, undefined)
  const receiver = p.receiver.toLowerCase() as Address
  const mine = await x.db
    .selectFrom('facilitator_batch_channels')
    .select('channel_id')
    .where('user_id', '=', userId)
    .where('receiver', '=', receiver)
    .where('token', '=', x.usdc)
    .executeTakeFirst()
  if (!mine)
    return refused(
      network,
      'facilitator_channel_not_yours',
      `no channel of receiver ${getAddress(receiver)} was opened here with this key`,
    )
  let totals
  try {
    totals = await x.chain.readContract({
      address: BATCH_SETTLEMENT_ADDRESS,
      abi: batchSettlementAbi,
      functionName: 'receivers',
      args: [getAddress(receiver), getAddress(x.usdc)],
    })
  } catch {
    return refused(network, 'invalid_batch_settlement_evm_rpc_read_failed')
  }
  const [claimed, settled] = totals
  const send = receiverSettleSend(x, network, receiver, claimed, settled)
  // settled already: by an earlier settle of this total (two at once, or a repeat after its
  // transaction mined), which is answered again; else there is nothing to settle
  if (claimed <= settled)
    return (await firstAnswer(x, userId, send)) ?? refused(network, 'invalid_batch_settlement_evm_nothing_to_settle')
  return sendOnce(x, userId, send)
}

/** The `settle(receiver, token)` of the claimed total, keyed by that total (one transaction per total). */
function receiverSettleSend(
  x: BatchFacilitatorContext,
  network: string,
  receiver: Address,
  claimed: bigint,
  settled: bigint,
): BatchSend {
  return {
    key: {
      action: 'settle',
      network,
      asset: x.usdc,
      payer: receiver,
      payTo: receiver,
      value: claimed > settled ? claimed - settled : 0n,
      nonce: `settle:${claimed}`,
      signature: '',
    },
    tx: { to: BATCH_SETTLEMENT_ADDRESS, data: encodeSettle(getAddress(receiver), getAddress(x.usdc)) },
    simulationFailed: 'invalid_batch_settlement_evm_settle_simulation_failed',
    transactionFailed: 'invalid_batch_settlement_evm_settle_transaction_failed',
    succeeded: async (receipt) => {
      const logs = parseEventLogs({ abi: batchSettlementAbi, eventName: 'Settled', logs: receipt.logs })
      const ours = logs.find((l) => l.args.receiver.toLowerCase() === receiver)
      return {
        success: true,
        transaction: receipt.transactionHash,
        network,
        amount: (ours?.args.amount ?? 0n).toString(),
      }
    },
  }
}

/** `POST /facilitator/settle` of a batch-settlement payload, by its `type`. */
export async function settleBatchCall(
  x: BatchFacilitatorContext,
  call: FacilitatorCall,
  userId: string,
  nowMs: number,
): Answer {
  const network = call.requirements.network
  const wrong = wrongChainOrToken(x, network, call.requirements.asset)
  if (wrong) return refused(network, wrong.reason, wrong.message)
  const type = (call.envelope.payload as Obj | null)?.type
  if (type === 'deposit') return settleDeposit(x, call, userId, nowMs)
  if (type === 'claim') return settleClaims(x, call, userId)
  if (type === 'settle') return settleReceiver(x, call, userId)
  if (type === 'refund') {
    return settleRefund(x, call, userId)
  }
  return refused(
    network,
    'invalid_batch_settlement_evm_payload_type',
    'settle takes deposit, claim, settle or refund payloads',
  )
}

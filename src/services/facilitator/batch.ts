/**
 * Facilitator mode, `batch-settlement` on EVM: what `POST /facilitator/verify` answers for a seller
 * whose own server runs the official batch-settlement server scheme (`@x402/evm/batch-settlement/
 * server`). The server keeps its channels' state (what it charged, its pending request); the
 * facilitator checks what needs no server state, with the platform's own scheme code
 * (src/schemes/batch-settlement/verify.ts: the accepted requirement, the payload, rules 1 to 6, a
 * deposit's ERC-3009 authorization and the payer's balance; a smart-wallet payer's signatures
 * through ERC-1271), then the channel on chain as the official facilitator does (a voucher: the
 * channel exists, `maxClaimableAmount` within its balance and above what is claimed), and answers
 * the channel's on-chain state in `extra`, which the official server mirrors. The seller's terms
 * come from its requirement: `payTo` is the channel's receiver, `extra.receiverAuthorizer` (the
 * platform's key, from `/supported`, or the server's own) and `extra.withdrawDelay` its config's.
 *
 * Settling (./batch-settle.ts): a deposit, the server's `claim`, `settle` and `refund`.
 */
import { getAddress, type Address } from 'viem'
import type { AuthorizerSigner } from '../../chain/batch-settlement/authorizer.js'
import { readChannel, type OnchainChannel } from '../../chain/batch-settlement/channel.js'
import { usdcAbi } from '../../chain/usdc-abi.js'
import { depositNonce, type DepositExecutor } from '../../schemes/batch-settlement/deposit.js'
import type { BatchPayload } from '../../schemes/batch-settlement/payload.js'
import { batchDomainSeparator } from '../../schemes/batch-settlement/typed-data.js'
import { verifyBatch, type BatchVerifyContext } from '../../schemes/batch-settlement/verify.js'
import { refuse, type ReasonCode, type Refusal } from '../../x402/reasons.js'
import type { ExactFacilitatorDeps, VerifyAnswer } from './exact.js'
import { termsOf, type FacilitatorCall } from './request.js'

/** exact's dependencies, and what the channel actions need besides */
export interface BatchFacilitatorDeps extends ExactFacilitatorDeps {
  deposits: Pick<DepositExecutor, 'check'>
  /** the platform's receiverAuthorizer key (platform_keys, encrypted under the master key) */
  authorizer: () => Promise<AuthorizerSigner>
}

/** The deps with what every check uses, computed once. */
export interface BatchFacilitatorContext extends BatchFacilitatorDeps {
  /** the x402 Batch Settlement EIP-712 domain separator of this chain */
  domain: Uint8Array
  /** the platform's USDC, lower-case */
  usdc: Address
}

/** `POST /verify` of a batch-settlement payload: the channel's on-chain state in `extra` when valid. */
export interface BatchVerifyAnswer extends VerifyAnswer {
  extra?: ChannelStateExtra
}

/** A channel's state as the official server reads it from a verify or settle answer. */
export interface ChannelStateExtra {
  channelId: string
  balance: string
  totalClaimed: string
  withdrawRequestedAt: number
  refundNonce: string
}

/** A payload that passed the checks: the payload and the channel as it is on chain now. */
export interface CheckedBatch {
  batch: BatchPayload
  onchain: OnchainChannel
}

export function batchFacilitatorContext(d: BatchFacilitatorDeps): BatchFacilitatorContext {
  return {
    ...d,
    domain: batchDomainSeparator(d.config.chain.chainId),
    usdc: d.config.chain.usdc.address.toLowerCase() as Address,
  }
}

export const channelStateExtra = (channelId: string, c: OnchainChannel): ChannelStateExtra => ({
  channelId,
  balance: c.balance.toString(),
  totalClaimed: c.totalClaimed.toString(),
  withdrawRequestedAt: c.withdrawRequestedAt,
  refundNonce: c.refundNonce.toString(),
})

const ADDRESS = /^0x[0-9a-fA-F]{40}$/

/** the requirement is for this platform's chain and token; undefined when it is */
export function wrongChainOrToken(x: BatchFacilitatorContext, network: string, asset: string): Refusal | undefined {
  const caip2 = x.config.chain.caip2
  if (network !== caip2)
    return refuse('invalid_batch_settlement_evm_network_mismatch', `this facilitator settles on ${caip2}`)
  if (asset.toLowerCase() !== x.usdc)
    return refuse(
      'invalid_batch_settlement_evm_token_mismatch',
      `this facilitator settles ${getAddress(x.usdc)} (USDC)`,
    )
  return undefined
}

/** The scheme's verify context with the seller's terms (its requirement's extra). */
function sellerContext(x: BatchFacilitatorContext, call: FacilitatorCall): BatchVerifyContext | Refusal {
  const extra = (call.requirements.extra ?? {}) as Record<string, unknown>
  const ra = extra.receiverAuthorizer
  if (typeof ra !== 'string' || !ADDRESS.test(ra) || /^0x0{40}$/.test(ra))
    return refuse(
      'invalid_batch_settlement_evm_receiver_authorizer_mismatch',
      'the requirement has no extra.receiverAuthorizer',
    )
  const wd = extra.withdrawDelay
  if (typeof wd !== 'number' || !Number.isSafeInteger(wd))
    return refuse('invalid_batch_settlement_evm_withdraw_delay_mismatch', 'the requirement has no extra.withdrawDelay')
  return {
    config: x.config,
    domain: x.domain,
    recovery: x.recovery,
    smartWallets: x.smartWallets,
    deposits: x.deposits,
    receiverAuthorizer: ra.toLowerCase() as Address,
    withdrawDelay: wd,
  }
}

/** The official facilitator's rules on the channel on chain (a deposit counts its amount in). */
function chainRule(b: BatchPayload, c: OnchainChannel): ReasonCode | undefined {
  const deposit = b.deposit?.amount ?? 0n
  if (c.balance === 0n && deposit === 0n) return 'invalid_batch_settlement_evm_channel_not_found'
  if (b.maxClaimable > c.balance + deposit) return 'invalid_batch_settlement_evm_cumulative_exceeds_balance'
  const below = b.type === 'refund' ? b.maxClaimable < c.totalClaimed : b.maxClaimable <= c.totalClaimed
  return below ? 'invalid_batch_settlement_evm_cumulative_below_claimed' : undefined
}

/** the deposit's ERC-3009 authorization was used already (a replayed deposit) */
async function depositUsed(x: BatchFacilitatorContext, b: BatchPayload): Promise<boolean> {
  return x.chain.readContract({
    address: getAddress(b.config.token),
    abi: usdcAbi,
    functionName: 'authorizationState',
    args: [getAddress(b.config.payer), depositNonce(b.channelId, b.deposit!.salt)],
  })
}

/**
 * A deposit, voucher or refund payload checked (the scheme's verify, then the channel on chain):
 * the payload and the channel, or the refusal (with the payer once it is known).
 */
export async function checkBatch(
  x: BatchFacilitatorContext,
  call: FacilitatorCall,
  nowMs: number,
): Promise<CheckedBatch | (Refusal & { payer?: string })> {
  const r = call.requirements
  const wrong = wrongChainOrToken(x, r.network, r.asset)
  if (wrong) return wrong
  const vx = sellerContext(x, call)
  if ('ok' in vx) return vx
  // the deposit is submitted at once on settle: its authorization need only outlive that (callMs 0)
  const v = await verifyBatch(vx, call.envelope, { terms: termsOf(r, x.config) }, { nowMs, callMs: 0, log: x.log })
  if (!('batch' in v)) {
    // a smart wallet that could not be asked now (the proxy's 503): the chain was not read
    if (!v.reason && v.error) return refuse('invalid_batch_settlement_evm_rpc_read_failed', v.error.message)
    return refuse(v.reason ?? 'invalid_batch_settlement_evm_payload_type', v.message)
  }
  const payer = getAddress(v.batch.config.payer)
  let onchain: OnchainChannel
  try {
    if (v.batch.deposit && (await depositUsed(x, v.batch)))
      return {
        ...refuse('invalid_batch_settlement_evm_deposit_simulation_failed', 'its authorization was used'),
        payer,
      }
    onchain = await readChannel(x.chain, v.batch.channelId)
  } catch (err) {
    x.log.warn({ err: (err as Error).message }, 'facilitator channel read failed')
    return { ...refuse('invalid_batch_settlement_evm_rpc_read_failed'), payer }
  }
  const broken = chainRule(v.batch, onchain)
  return broken ? { ...refuse(broken), payer } : { batch: v.batch, onchain }
}

/** `POST /facilitator/verify` of a batch-settlement payload (deposit, voucher or refund). */
export async function verifyBatchCall(
  x: BatchFacilitatorContext,
  call: FacilitatorCall,
  nowMs: number,
): Promise<BatchVerifyAnswer> {
  const c = await checkBatch(x, call, nowMs)
  if ('ok' in c)
    return {
      isValid: false,
      invalidReason: c.reason,
      invalidMessage: c.message,
      ...(c.payer ? { payer: c.payer } : {}),
    }
  return {
    isValid: true,
    payer: getAddress(c.batch.config.payer),
    extra: channelStateExtra(c.batch.channelId, c.onchain),
  }
}

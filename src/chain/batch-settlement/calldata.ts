/**
 * Calldata for the transactions the platform's relayer sends to the batch-settlement contract.
 */
import { encodeFunctionData, type Address, type Hex } from 'viem'
import { batchSettlementAbi } from './abi.js'
import type { ClaimEntry } from './authorizer.js'
import { normalizeConfig, type ChannelConfig } from './channel.js'

/** One channel's claim: its config, the payer's latest voucher and the cumulative amount to claim. */
export interface VoucherClaimInput {
  config: ChannelConfig
  maxClaimableAmount: bigint
  /** the payer's voucher signature over (channelId, maxClaimableAmount) */
  signature: Hex
  /** cumulative target, ≤ maxClaimableAmount */
  totalClaimed: bigint
}

/** The ClaimBatch rows a receiverAuthorizer signs for these claims (same order). */
export function claimEntries(claims: readonly VoucherClaimInput[], channelIds: readonly Hex[]): ClaimEntry[] {
  return claims.map((c, i) => ({
    channelId: channelIds[i]!,
    maxClaimableAmount: c.maxClaimableAmount,
    totalClaimed: c.totalClaimed,
  }))
}

function voucherClaims(claims: readonly VoucherClaimInput[]) {
  return claims.map((c) => ({
    voucher: { channel: normalizeConfig(c.config), maxClaimableAmount: c.maxClaimableAmount },
    signature: c.signature,
    totalClaimed: c.totalClaimed,
  }))
}

/** claimWithSignature(claims, authorizerSignature): many channels of one receiverAuthorizer. */
export function encodeClaimWithSignature(claims: readonly VoucherClaimInput[], authorizerSignature: Hex): Hex {
  return encodeFunctionData({
    abi: batchSettlementAbi,
    functionName: 'claimWithSignature',
    args: [voucherClaims(claims), authorizerSignature],
  })
}

/** settle(receiver, token): moves everything claimed and unsettled for the pair to the receiver. */
export function encodeSettle(receiver: Address, token: Address): Hex {
  return encodeFunctionData({ abi: batchSettlementAbi, functionName: 'settle', args: [receiver, token] })
}

/** refundWithSignature(config, amount, nonce, sig): a cooperative refund any relayer may submit. */
export function encodeRefundWithSignature(
  config: ChannelConfig,
  amount: bigint,
  nonce: bigint,
  receiverAuthorizerSignature: Hex,
): Hex {
  return encodeFunctionData({
    abi: batchSettlementAbi,
    functionName: 'refundWithSignature',
    args: [normalizeConfig(config), amount, nonce, receiverAuthorizerSignature],
  })
}

/** multicall(calls): several calls on the contract in one transaction (a refund's claim, then the refund). */
export function encodeMulticall(calls: readonly Hex[]): Hex {
  return encodeFunctionData({ abi: batchSettlementAbi, functionName: 'multicall', args: [calls] })
}

/** deposit(config, amount, collector, collectorData). */
export function encodeDeposit(config: ChannelConfig, amount: bigint, collector: Address, collectorData: Hex): Hex {
  return encodeFunctionData({
    abi: batchSettlementAbi,
    functionName: 'deposit',
    args: [normalizeConfig(config), amount, collector, collectorData],
  })
}

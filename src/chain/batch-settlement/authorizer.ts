/**
 * The receiverAuthorizer's EIP-712 signatures: a ClaimBatch (one signature authorizes the claims of
 * many channels in one claimWithSignature, submitted by any relayer) and a cooperative Refund.
 */
import type { Address, Hex, LocalAccount } from 'viem'
import { batchSettlementDomain } from './channel.js'

/** What signs for the receiverAuthorizer: a viem local account (the platform key). */
export type AuthorizerSigner = Pick<LocalAccount, 'address' | 'signTypedData'>

/** One row of a claim batch, as signed. */
export interface ClaimEntry {
  channelId: Hex
  maxClaimableAmount: bigint
  totalClaimed: bigint
}

const claimBatchTypes = {
  ClaimBatch: [{ name: 'claims', type: 'ClaimEntry[]' }],
  ClaimEntry: [
    { name: 'channelId', type: 'bytes32' },
    { name: 'maxClaimableAmount', type: 'uint128' },
    { name: 'totalClaimed', type: 'uint128' },
  ],
} as const

const refundTypes = {
  Refund: [
    { name: 'channelId', type: 'bytes32' },
    { name: 'nonce', type: 'uint256' },
    { name: 'amount', type: 'uint128' },
  ],
} as const

/** Signs the ClaimBatch of `entries` (in the order they are submitted). */
export function signClaimBatch(
  signer: AuthorizerSigner,
  chainId: number,
  entries: readonly ClaimEntry[],
  contract?: Address,
): Promise<Hex> {
  return signer.signTypedData({
    domain: batchSettlementDomain(chainId, contract),
    types: claimBatchTypes,
    primaryType: 'ClaimBatch',
    message: { claims: entries.map((e) => ({ ...e })) },
  })
}

/** Signs a cooperative Refund of at most `amount` at the channel's current `refundNonce`. */
export function signRefund(
  signer: AuthorizerSigner,
  chainId: number,
  refund: { channelId: Hex; nonce: bigint; amount: bigint },
  contract?: Address,
): Promise<Hex> {
  return signer.signTypedData({
    domain: batchSettlementDomain(chainId, contract),
    types: refundTypes,
    primaryType: 'Refund',
    message: refund,
  })
}

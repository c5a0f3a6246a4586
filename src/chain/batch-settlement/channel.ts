/**
 * Channels of the batch-settlement contract: the immutable ChannelConfig, its id (the EIP-712 hash of
 * the config under the contract's domain, so the same config on another chain is another channel) and
 * the channel's on-chain state.
 */
import { getAddress, hashTypedData, type Address, type Hex, type PublicClient } from 'viem'
import { batchSettlementAbi } from './abi.js'
import { BATCH_SETTLEMENT_ADDRESS, BATCH_SETTLEMENT_DOMAIN_NAME, BATCH_SETTLEMENT_DOMAIN_VERSION } from './addresses.js'

export interface ChannelConfig {
  payer: Address
  payerAuthorizer: Address
  receiver: Address
  receiverAuthorizer: Address
  token: Address
  /** seconds, 900 … 2,592,000 */
  withdrawDelay: number
  salt: Hex
}

/** The contract's EIP-712 domain on `chainId`. */
export function batchSettlementDomain(chainId: number, contract: Address = BATCH_SETTLEMENT_ADDRESS) {
  return {
    name: BATCH_SETTLEMENT_DOMAIN_NAME,
    version: BATCH_SETTLEMENT_DOMAIN_VERSION,
    chainId,
    verifyingContract: contract,
  } as const
}

const channelConfigTypes = {
  ChannelConfig: [
    { name: 'payer', type: 'address' },
    { name: 'payerAuthorizer', type: 'address' },
    { name: 'receiver', type: 'address' },
    { name: 'receiverAuthorizer', type: 'address' },
    { name: 'token', type: 'address' },
    { name: 'withdrawDelay', type: 'uint40' },
    { name: 'salt', type: 'bytes32' },
  ],
} as const

/** The config with checksummed addresses, as the contract's ABI encoder wants it. */
export function normalizeConfig(config: ChannelConfig): ChannelConfig {
  return {
    payer: getAddress(config.payer),
    payerAuthorizer: getAddress(config.payerAuthorizer),
    receiver: getAddress(config.receiver),
    receiverAuthorizer: getAddress(config.receiverAuthorizer),
    token: getAddress(config.token),
    withdrawDelay: config.withdrawDelay,
    salt: config.salt,
  }
}

/** The channel id: what `getChannelId(config)` returns on chain `chainId`. */
export function channelIdOf(config: ChannelConfig, chainId: number, contract: Address = BATCH_SETTLEMENT_ADDRESS): Hex {
  return hashTypedData({
    domain: batchSettlementDomain(chainId, contract),
    types: channelConfigTypes,
    primaryType: 'ChannelConfig',
    message: normalizeConfig(config),
  })
}

export interface OnchainChannel {
  /** everything deposited and not refunded or withdrawn (claimed funds stay counted until settled out) */
  balance: bigint
  /** cumulative claimed */
  totalClaimed: bigint
  /** unix seconds the pending timed withdrawal started; 0 when none */
  withdrawRequestedAt: number
  /** the amount that withdrawal asked for */
  withdrawAmount: bigint
  refundNonce: bigint
}

/** Reads a channel's state from the contract (three view calls, batched by viem's multicall). */
export async function readChannel(
  client: Pick<PublicClient, 'multicall'>,
  channelId: Hex,
  contract: Address = BATCH_SETTLEMENT_ADDRESS,
): Promise<OnchainChannel> {
  const [ch, pending, nonce] = await client.multicall({
    allowFailure: false,
    contracts: [
      { address: contract, abi: batchSettlementAbi, functionName: 'channels', args: [channelId] },
      { address: contract, abi: batchSettlementAbi, functionName: 'pendingWithdrawals', args: [channelId] },
      { address: contract, abi: batchSettlementAbi, functionName: 'refundNonce', args: [channelId] },
    ],
  })
  return {
    balance: ch[0],
    totalClaimed: ch[1],
    withdrawRequestedAt: pending[1],
    withdrawAmount: pending[0],
    refundNonce: nonce,
  }
}

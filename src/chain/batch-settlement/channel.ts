/**
 * Channels of the batch-settlement contract: the immutable ChannelConfig, its id (the EIP-712 hash of
 * the config under the contract's domain, so the same config on another chain is another channel) and
 * the channel's on-chain state.
 */
import { getAddress, hashTypedData, type Address, type Hex, type PublicClient } from 'viem'
import type { BatchChannelsTable } from '../../db/batch-channels-tables.js'
import { MULTICALL3_ADDRESS } from '../multicall3-abi.js'
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

/** A stored channel's config (`batch_channels`' columns; the fields its id is the hash of). */
export function configOfRow(
  r: Pick<
    BatchChannelsTable,
    'payer' | 'payer_authorizer' | 'receiver' | 'receiver_authorizer' | 'token' | 'withdraw_delay' | 'salt'
  >,
): ChannelConfig {
  return {
    payer: r.payer as Address,
    payerAuthorizer: r.payer_authorizer as Address,
    receiver: r.receiver as Address,
    receiverAuthorizer: r.receiver_authorizer as Address,
    token: r.token as Address,
    withdrawDelay: r.withdraw_delay,
    salt: r.salt as Hex,
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

/** Reads a channel's state from the contract (three view calls in one Multicall3 call). */
export async function readChannel(
  client: Pick<PublicClient, 'multicall'>,
  channelId: Hex,
  contract: Address = BATCH_SETTLEMENT_ADDRESS,
): Promise<OnchainChannel> {
  return (await readChannels(client, [channelId], contract))[0]!
}

/** Reads many channels' state in one Multicall3 call (keep it to a few hundred ids). */
export async function readChannels(
  client: Pick<PublicClient, 'multicall'>,
  channelIds: readonly Hex[],
  contract: Address = BATCH_SETTLEMENT_ADDRESS,
): Promise<OnchainChannel[]> {
  if (channelIds.length === 0) return []
  const calls = channelIds.flatMap((id) => [
    { address: contract, abi: batchSettlementAbi, functionName: 'channels' as const, args: [id] as const },
    { address: contract, abi: batchSettlementAbi, functionName: 'pendingWithdrawals' as const, args: [id] as const },
    { address: contract, abi: batchSettlementAbi, functionName: 'refundNonce' as const, args: [id] as const },
  ])
  // deps.chain has no chain definition: name the canonical Multicall3 (on the dev chain too)
  const out = (await client.multicall({
    allowFailure: false,
    multicallAddress: MULTICALL3_ADDRESS,
    contracts: calls,
  })) as unknown[]
  return channelIds.map((_, i) => {
    const [balance, totalClaimed] = out[i * 3] as readonly [bigint, bigint]
    const [withdrawAmount, initiatedAt] = out[i * 3 + 1] as readonly [bigint, number]
    return {
      balance,
      totalClaimed,
      withdrawRequestedAt: Number(initiatedAt),
      withdrawAmount,
      refundNonce: out[i * 3 + 2] as bigint,
    }
  })
}

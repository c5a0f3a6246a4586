/**
 * What the `batch-settlement` server reads and sends on chain, against the canonical
 * `x402BatchSettlement` contract: a channel's balance and totalClaimed (`channels(channelId)`),
 * and the deposit call (`deposit(config, amount, collector, collectorData)`) with the ERC-3009
 * collector's data. The ABI fragments follow `@x402/evm`'s (its ABI is not exported).
 */
import { encodeAbiParameters, encodeFunctionData, getAddress, type Hex, type PublicClient } from 'viem'
import { BATCH_SETTLEMENT_ADDRESS, ERC3009_DEPOSIT_COLLECTOR } from './constants.js'
import type { Erc3009Deposit } from './payload.js'
import type { ChannelConfig } from './typed-data.js'

const CONFIG_COMPONENTS = [
  { name: 'payer', type: 'address' },
  { name: 'payerAuthorizer', type: 'address' },
  { name: 'receiver', type: 'address' },
  { name: 'receiverAuthorizer', type: 'address' },
  { name: 'token', type: 'address' },
  { name: 'withdrawDelay', type: 'uint40' },
  { name: 'salt', type: 'bytes32' },
] as const

const BATCH_ABI = [
  {
    type: 'function',
    name: 'channels',
    stateMutability: 'view',
    inputs: [{ name: 'channelId', type: 'bytes32' }],
    outputs: [
      { name: 'balance', type: 'uint128' },
      { name: 'totalClaimed', type: 'uint128' },
    ],
  },
  {
    type: 'function',
    name: 'deposit',
    stateMutability: 'nonpayable',
    inputs: [
      { name: 'config', type: 'tuple', components: CONFIG_COMPONENTS },
      { name: 'amount', type: 'uint128' },
      { name: 'collector', type: 'address' },
      { name: 'collectorData', type: 'bytes' },
    ],
    outputs: [],
  },
] as const

const BALANCE_OF = [
  {
    type: 'function',
    name: 'balanceOf',
    stateMutability: 'view',
    inputs: [{ name: 'account', type: 'address' }],
    outputs: [{ name: '', type: 'uint256' }],
  },
] as const

export interface OnChainChannel {
  balance: bigint
  totalClaimed: bigint
}

/** `channels(channelId)`: zeros for a channel never funded. */
export async function readChannelOnChain(chain: PublicClient, channelId: Hex): Promise<OnChainChannel> {
  const [balance, totalClaimed] = await chain.readContract({
    address: getAddress(BATCH_SETTLEMENT_ADDRESS),
    abi: BATCH_ABI,
    functionName: 'channels',
    args: [channelId],
  })
  return { balance, totalClaimed }
}

export function tokenBalance(chain: PublicClient, token: Hex, owner: Hex): Promise<bigint> {
  return chain.readContract({ address: token, abi: BALANCE_OF, functionName: 'balanceOf', args: [owner] })
}

/** The calldata of a deposit through the ERC-3009 collector (receiveWithAuthorization from the payer). */
export function depositCalldata(c: ChannelConfig, d: Erc3009Deposit): Hex {
  const collectorData = encodeAbiParameters(
    [{ type: 'uint256' }, { type: 'uint256' }, { type: 'uint256' }, { type: 'bytes' }],
    [d.validAfter, d.validBefore, d.salt, d.signature],
  )
  return encodeFunctionData({
    abi: BATCH_ABI,
    functionName: 'deposit',
    args: [{ ...c, withdrawDelay: c.withdrawDelay }, d.amount, getAddress(ERC3009_DEPOSIT_COLLECTOR), collectorData],
  })
}

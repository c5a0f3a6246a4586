/**
 * What the `batch-settlement` server sends and reads on chain beyond the shared helpers of
 * src/chain/batch-settlement/: the deposit call through the canonical ERC-3009 collector (its
 * `collectorData`), and the payer's token balance (rule 8).
 */
import { encodeAbiParameters, getAddress, type Hex, type PublicClient } from 'viem'
import { ERC3009_DEPOSIT_COLLECTOR_ADDRESS } from '../../chain/batch-settlement/addresses.js'
import { encodeDeposit } from '../../chain/batch-settlement/calldata.js'
import type { Erc3009Deposit } from './payload.js'
import type { ChannelConfig } from './typed-data.js'

const BALANCE_OF = [
  {
    type: 'function',
    name: 'balanceOf',
    stateMutability: 'view',
    inputs: [{ name: 'account', type: 'address' }],
    outputs: [{ name: '', type: 'uint256' }],
  },
] as const

export function tokenBalance(chain: PublicClient, token: Hex, owner: Hex): Promise<bigint> {
  return chain.readContract({ address: token, abi: BALANCE_OF, functionName: 'balanceOf', args: [owner] })
}

/** The calldata of a deposit through the ERC-3009 collector (receiveWithAuthorization from the payer). */
export function depositCalldata(c: ChannelConfig, d: Erc3009Deposit): Hex {
  const collectorData = encodeAbiParameters(
    [{ type: 'uint256' }, { type: 'uint256' }, { type: 'uint256' }, { type: 'bytes' }],
    [d.validAfter, d.validBefore, d.salt, d.signature],
  )
  return encodeDeposit(c, d.amount, getAddress(ERC3009_DEPOSIT_COLLECTOR_ADDRESS), collectorData)
}

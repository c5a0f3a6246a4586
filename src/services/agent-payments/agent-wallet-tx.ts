/**
 * A contract call the agent wallet itself sends (the timed withdrawal of its channels): signed with
 * its custodial key, gas paid from its own ETH. Signing checks the gas first, refusing with
 * `channel_withdraw_needs_gas` (how much ETH is needed) when the wallet cannot pay it; the caller
 * records the signed transaction before it is broadcast, so a repeat rebroadcasts it, never a second.
 */
import {
  BaseError,
  ContractFunctionRevertedError,
  formatEther,
  getAddress,
  keccak256,
  type Hex,
  type PublicClient,
} from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { appError } from '../../errors.js'
import type { AgentRow } from '../accounts/agent-auth.js'
import type { CustodialKeys } from './custodial-keys.js'

export interface WalletTxContext {
  chain: PublicClient
  chainId: number
  keys: CustodialKeys
  /** cap on maxFeePerGas (the settlement's) */
  feeCap: bigint
}

export interface SignedWalletTx {
  raw: Hex
  hash: Hex
  nonce: number
}

/**
 * Signs `data` to `to` from the agent wallet at its next nonce: gas estimated by `estimate` (the
 * contract call from the wallet, so a revert names the contract's error) plus a fifth, fees
 * capped. 409 `channel_withdraw_needs_gas` when its ETH cannot pay gas × maxFeePerGas; 409
 * `channel_withdraw_refused` when the chain would revert it (the contract's error named).
 */
export async function signWalletTx(
  ctx: WalletTxContext,
  agent: AgentRow,
  call: { to: Hex; data: Hex; name: string; channelId: string; estimate: () => Promise<bigint> },
): Promise<SignedWalletTx> {
  const from = getAddress(agent.address)
  const [estimate, fees, balance, nonce] = await Promise.all([
    call.estimate().catch((err: unknown) => {
      throw appError(
        'channel_withdraw_refused',
        { detail: `the chain would refuse ${call.name}: ${revertOf(err)}` },
        { details: { channel_id: call.channelId, reason: revertOf(err) } },
      )
    }),
    feesOf(ctx),
    ctx.chain.getBalance({ address: from }),
    ctx.chain.getTransactionCount({ address: from, blockTag: 'pending' }),
  ])
  const gas = (estimate * 6n) / 5n
  const needed = gas * fees.maxFeePerGas
  if (balance < needed)
    throw appError(
      'channel_withdraw_needs_gas',
      { balance: formatEther(balance), call: call.name, needed: formatEther(needed) },
      {
        details: {
          channel_id: call.channelId,
          needed_wei: needed.toString(),
          balance_wei: balance.toString(),
          gas: gas.toString(),
          max_fee_per_gas: fees.maxFeePerGas.toString(),
        },
      },
    )
  const account = privateKeyToAccount(`0x${ctx.keys.privateKeyOf(agent).toString('hex')}`)
  const raw = await account.signTransaction({
    type: 'eip1559',
    chainId: ctx.chainId,
    to: call.to,
    data: call.data,
    gas,
    nonce,
    ...fees,
  })
  return { raw, hash: keccak256(raw), nonce }
}

/** The node's fee estimate, capped. */
async function feesOf(ctx: WalletTxContext): Promise<{ maxFeePerGas: bigint; maxPriorityFeePerGas: bigint }> {
  const fees = await ctx.chain.estimateFeesPerGas()
  const maxFeePerGas = fees.maxFeePerGas > ctx.feeCap ? ctx.feeCap : fees.maxFeePerGas
  return {
    maxFeePerGas,
    maxPriorityFeePerGas: fees.maxPriorityFeePerGas > maxFeePerGas ? maxFeePerGas : fees.maxPriorityFeePerGas,
  }
}

/** The contract's error name when the chain says it, else the node's short message. */
function revertOf(err: unknown): string {
  if (err instanceof BaseError) {
    const reverted = err.walk((e) => e instanceof ContractFunctionRevertedError)
    if (reverted instanceof ContractFunctionRevertedError && reverted.data?.errorName) return reverted.data.errorName
    return err.shortMessage
  }
  return String((err as Error)?.message ?? err)
}

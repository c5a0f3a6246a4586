/**
 * How `exact` payments settle (src/services/settlement/ runs it): the token's EIP-3009
 * `transferWithAuthorization`, many to a Multicall3 batch from any of our relayers; the token's
 * `authorizationState` says whether an authorization is used, its `AuthorizationUsed` log which
 * transaction used it (or `AuthorizationCanceled` that it never will be).
 */
import { encodeFunctionData, getAddress, parseEventLogs, parseSignature, size, type Hex, type Log } from 'viem'
import { blockChunks } from '../../chain/block-chunks.js'
import { innerSignature } from '../../chain/contract-signature.js'
import { usdcAbi } from '../../chain/usdc-abi.js'
import type { Payment } from '../../db/database.js'
import { authorizationKey, type RelayerSettlement } from '../../seam/types.js'

/**
 * calldata for the token's transferWithAuthorization: 65-byte signatures use the (v,r,s)
 * overload, smart-wallet signatures the bytes one (ERC-6492 wrappers unwrapped: the token asks
 * the deployed wallet, ERC-1271).
 */
export function transferCallData(p: Payment): Hex {
  const base = [
    getAddress(p.payer),
    getAddress(p.pay_to),
    BigInt(p.value),
    BigInt(p.valid_after),
    BigInt(p.valid_before),
    p.nonce as Hex,
  ] as const
  const sig = p.signature as Hex
  if (size(sig) === 65) {
    const { r, s, v, yParity } = parseSignature(sig)
    const vv = Number(v ?? 27n + BigInt(yParity ?? 0))
    return encodeFunctionData({ abi: usdcAbi, functionName: 'transferWithAuthorization', args: [...base, vv, r, s] })
  }
  return encodeFunctionData({
    abi: usdcAbi,
    functionName: 'transferWithAuthorization',
    args: [...base, innerSignature(sig)],
  })
}

export const exactSettlement: RelayerSettlement = {
  kind: 'relayer',
  scheme: 'exact',

  call: (p, asset) => ({ target: getAddress(asset), callData: transferCallData(p) }),

  usedQuery: (p, asset) => ({
    contract: {
      address: getAddress(asset),
      abi: usdcAbi,
      functionName: 'authorizationState',
      args: [getAddress(p.payer), p.nonce as Hex],
    },
    used: (result) => result === true,
  }),

  usedInLogs(asset: string, logs: Log[]) {
    const out = new Set<string>()
    for (const e of parseEventLogs({ abi: usdcAbi, eventName: 'AuthorizationUsed', logs, strict: false })) {
      if (e.address.toLowerCase() !== asset.toLowerCase() || !e.args.authorizer || !e.args.nonce) continue
      out.add(authorizationKey(e.args.authorizer, e.args.nonce))
    }
    return out
  },

  async findOutcome(client, asset, p, range) {
    const address = getAddress(asset)
    // filtered here rather than by topic: some nodes mishandle an indexed bytes32 topic filter
    const authorizer = getAddress(p.payer)
    const mine = (e: { args: { authorizer?: string; nonce?: string } }) =>
      e.args.authorizer?.toLowerCase() === authorizer.toLowerCase() &&
      e.args.nonce?.toLowerCase() === p.nonce.toLowerCase()
    // an authorization is either used or canceled, never both: the first chunk with either decides
    for (const { fromBlock, toBlock } of blockChunks(range)) {
      const used = (
        await client.getContractEvents({
          address,
          abi: usdcAbi,
          eventName: 'AuthorizationUsed',
          args: { authorizer },
          fromBlock,
          toBlock,
        })
      ).filter(mine)
      if (used[0]?.transactionHash) return { kind: 'used', txHash: used[0].transactionHash }
      const canceled = (
        await client.getContractEvents({
          address,
          abi: usdcAbi,
          eventName: 'AuthorizationCanceled',
          args: { authorizer },
          fromBlock,
          toBlock,
        })
      ).filter(mine)
      if (canceled.length > 0) return { kind: 'canceled' }
    }
    return { kind: 'unknown' }
  },

  // any chain with the token takes transfers in a Multicall3 batch
  path: async () => 'batch',
}

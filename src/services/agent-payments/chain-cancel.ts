/**
 * Cancels an EIP-3009 authorization the platform signed for an agent wallet, on chain: the
 * custodial key signs `CancelAuthorization(authorizer, nonce)` and a relayer sends
 * `cancelAuthorization` (the agent needs no gas). Only a successful receipt proves that the
 * authorization can never move funds, and only then may its amount leave the agent's caps early
 * (docs/buyer.md, Known limits). A cancel that would revert (the authorization was used first) is
 * never sent.
 *
 * @example
 *   const r = await cancels.cancel(key, agent.address, row.nonce)
 *   if (r.kind === 'cancelled') release(row, r.hash)
 */
import { encodeFunctionData, getAddress, type Hex, type PublicClient } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { usdcAbi } from '../../chain/usdc-abi.js'
import type { RedisClient } from '../../redis-client.js'
import { createRelayerLock, relayersFromKeys } from '../../chain/relayer.js'
import { relayerCall } from '../../chain/relayer-call.js'

const CANCEL_TYPES = {
  CancelAuthorization: [
    { name: 'authorizer', type: 'address' },
    { name: 'nonce', type: 'bytes32' },
  ],
} as const

export type CancelResult =
  | { kind: 'cancelled'; hash: Hex }
  /** not cancelled: used already, reverted, no relayer free or the chain did not answer */
  | { kind: 'not_cancelled'; reason: string }

export function createChainCancel(deps: {
  redis: RedisClient
  key(...parts: string[]): string
  chain: PublicClient
  chainId: number
  relayerKeys: readonly Hex[]
  maxFeePerGasWei: bigint
  usdc: { address: string; name: string; version: string }
}) {
  const relayers = relayersFromKeys(deps.relayerKeys)
  const lock = createRelayerLock(deps.redis, deps.key)
  const token = getAddress(deps.usdc.address)

  return {
    /** Cancels `nonce` of `authorizer` (the wallet of `privateKey`) on chain and waits for the receipt. */
    async cancel(privateKey: Buffer, authorizer: string, nonce: string): Promise<CancelResult> {
      if (relayers.length === 0) return { kind: 'not_cancelled', reason: 'no relayer is configured here' }
      const account = privateKeyToAccount(`0x${privateKey.toString('hex')}`)
      const signature = await account.signTypedData({
        domain: { name: deps.usdc.name, version: deps.usdc.version, chainId: deps.chainId, verifyingContract: token },
        types: CANCEL_TYPES,
        primaryType: 'CancelAuthorization',
        message: { authorizer: getAddress(authorizer), nonce: nonce as Hex },
      })
      const data = encodeFunctionData({
        abi: usdcAbi,
        functionName: 'cancelAuthorization',
        args: [getAddress(authorizer), nonce as Hex, signature],
      })
      try {
        const r = await relayerCall(
          { chain: deps.chain, chainId: deps.chainId, maxFeePerGasWei: deps.maxFeePerGasWei, lock, relayers },
          { to: token, data },
        )
        if (!r) return { kind: 'not_cancelled', reason: 'no relayer was free to send the cancellation' }
        if (r.status !== 'success') return { kind: 'not_cancelled', reason: `the cancellation reverted (${r.hash})` }
        return { kind: 'cancelled', hash: r.hash }
      } catch (err) {
        // gas estimation reverts when the authorization was used (or cancelled) already
        return { kind: 'not_cancelled', reason: (err as Error).message.split('\n')[0] ?? 'the chain refused' }
      }
    },
  }
}

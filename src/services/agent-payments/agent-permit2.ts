/**
 * An agent wallet's Permit2 approval for the `upto` scheme: before its first upto payment the
 * wallet must let Permit2 move its USDC (the proxy refuses `permit2_allowance_required` otherwise).
 * The custodial key signs an EIP-2612 `permit(owner, Permit2, max uint256)` and a relayer sends it
 * (the agent needs no gas), as the deferred deposit's permit is sent (agent-escrow.ts). Once per
 * wallet: later payments find the allowance.
 *
 * @example
 *   await permit2.ensure(agent.address, key, usdc, maxPrice)
 */
import {
  encodeFunctionData,
  getAddress,
  maxUint256,
  parseSignature,
  type Address,
  type Hex,
  type PublicClient,
} from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { PERMIT2_ADDRESS } from '../../chain/permit2.js'
import { appError } from '../../errors.js'
import type { RedisClient } from '../../redis-client.js'
import { permitTypedData } from '../../schemes/deferred/typed-data.js'
import { createRelayerLock, relayersFromKeys } from '../../chain/relayer.js'
import { relayerCall } from '../../chain/relayer-call.js'

const abi = [
  {
    type: 'function',
    name: 'allowance',
    stateMutability: 'view',
    inputs: [
      { name: 'owner', type: 'address' },
      { name: 'spender', type: 'address' },
    ],
    outputs: [{ type: 'uint256' }],
  },
  {
    type: 'function',
    name: 'nonces',
    stateMutability: 'view',
    inputs: [{ name: 'owner', type: 'address' }],
    outputs: [{ type: 'uint256' }],
  },
  {
    type: 'function',
    name: 'permit',
    stateMutability: 'nonpayable',
    inputs: [
      { name: 'owner', type: 'address' },
      { name: 'spender', type: 'address' },
      { name: 'value', type: 'uint256' },
      { name: 'deadline', type: 'uint256' },
      { name: 'v', type: 'uint8' },
      { name: 'r', type: 'bytes32' },
      { name: 's', type: 'bytes32' },
    ],
    outputs: [],
  },
] as const

export interface AgentPermit2Deps {
  redis: RedisClient
  key(...parts: string[]): string
  chain: PublicClient
  chainId: number
  relayerKeys: readonly Hex[]
  maxFeePerGasWei: bigint
}

export function createAgentPermit2(deps: AgentPermit2Deps) {
  const relayers = relayersFromKeys(deps.relayerKeys)
  const lock = createRelayerLock(deps.redis, deps.key)
  /** wallets approved (max allowance seen): no read per payment */
  const approved = new Set<string>()
  /** one permit at a time per wallet in this process (concurrent first payments wait for it) */
  const pending = new Map<string, Promise<void>>()

  const allowance = (owner: Address, asset: Address) =>
    deps.chain.readContract({ address: asset, abi, functionName: 'allowance', args: [owner, PERMIT2_ADDRESS] })

  async function approve(
    owner: Address,
    privateKey: Buffer,
    asset: { address: string; name: string; version: string },
  ) {
    const token = getAddress(asset.address)
    if ((await allowance(owner, token)) >= maxUint256 / 2n) return
    if (relayers.length === 0)
      throw appError('service_unavailable', { detail: 'no relayer is configured here to send the Permit2 approval' })
    const nonce = await deps.chain.readContract({ address: token, abi, functionName: 'nonces', args: [owner] })
    const { timestamp } = await deps.chain.getBlock({ blockTag: 'latest' })
    const signer = privateKeyToAccount(`0x${privateKey.toString('hex')}`)
    const sig = parseSignature(
      await signer.signTypedData(
        permitTypedData(
          { owner, spender: PERMIT2_ADDRESS, value: maxUint256, nonce, deadline: timestamp + 600n },
          { name: asset.name, version: asset.version, chainId: deps.chainId, address: token },
        ),
      ),
    )
    const data = encodeFunctionData({
      abi,
      functionName: 'permit',
      args: [
        owner,
        PERMIT2_ADDRESS,
        maxUint256,
        timestamp + 600n,
        Number(sig.v ?? BigInt(sig.yParity + 27)),
        sig.r,
        sig.s,
      ],
    })
    let r
    try {
      r = await relayerCall(
        { chain: deps.chain, chainId: deps.chainId, maxFeePerGasWei: deps.maxFeePerGasWei, lock, relayers },
        { to: token, data },
      )
    } catch (err) {
      // another process's permit may have used the nonce first: the allowance decides
      if ((await allowance(owner, token)) >= maxUint256 / 2n) return
      throw appError('service_unavailable', {
        detail: `the Permit2 approval would revert (${(err as Error).message.split('\n')[0]}); nothing was sent, retry shortly`,
      })
    }
    if (!r)
      throw appError(
        'service_unavailable',
        { detail: 'no relayer is free to send the Permit2 approval now; retry shortly' },
        { headers: { 'retry-after': '5' } },
      )
    if (r.status !== 'success' && (await allowance(owner, token)) < maxUint256 / 2n)
      throw appError('service_unavailable', { detail: `the Permit2 approval reverted (${r.hash}); retry shortly` })
  }

  return {
    /** Makes sure Permit2 may move the wallet's `asset` (an unlimited allowance, sent once by a relayer). */
    async ensure(wallet: string, privateKey: Buffer, asset: { address: string; name: string; version: string }) {
      const owner = getAddress(wallet)
      const k = `${owner}:${asset.address.toLowerCase()}`
      if (approved.has(k)) return
      let p = pending.get(k)
      if (!p) {
        p = approve(owner, privateKey, asset).finally(() => pending.delete(k))
        pending.set(k, p)
      }
      await p
      approved.add(k)
    },
  }
}

/**
 * How `upto` payments settle (src/services/settlement/ runs it): the upto proxy's `settle` of the
 * actual charge (`value`) under the signed maximum (`max_value`), sent by the relayer the witness
 * names (its facilitator, pinned), in the Multicall3 batches where the chain's proxy takes them
 * (ours), else one transaction each (the reference proxy of public chains), or not at all where no
 * proxy is deployed. Permit2's nonce bitmap says whether an authorization is used; our proxy's
 * `UptoSettled` log, or the token's transfer in a transaction that called the proxy for it, which
 * transaction used it.
 */
import { decodeFunctionData, encodeFunctionData, getAddress, parseEventLogs, toHex, type Address, type Hex } from 'viem'
import { blockChunks } from '../../chain/block-chunks.js'
import { innerSignature } from '../../chain/contract-signature.js'
import { MULTICALL3_ADDRESS, multicall3Abi } from '../../chain/multicall3-abi.js'
import {
  PERMIT2_ADDRESS,
  permit2Abi,
  permit2NonceUsed,
  UPTO_PROXY_ADDRESS,
  uptoProxyAbi,
  uptoSettledEvent,
  uptoSettlementPath,
} from '../../chain/permit2.js'
import { usdcAbi } from '../../chain/usdc-abi.js'
import type { Payment } from '../../db/database.js'
import { authorizationKey, type RelayerSettlement } from '../../seam/types.js'

/** Whether calldata sent to the upto proxy is a `settle` of p's Permit2 authorization (owner, nonce). */
function settlesUpto(p: Payment, data: Hex): boolean {
  try {
    const { functionName, args } = decodeFunctionData({ abi: uptoProxyAbi, data })
    return (
      functionName === 'settle' && args[2].toLowerCase() === p.payer.toLowerCase() && args[0].nonce === BigInt(p.nonce)
    )
  } catch {
    return false
  }
}

/**
 * Whether a transaction called the upto proxy's `settle` for p: directly, or as one call of a
 * Multicall3 aggregate3.
 */
function transactionSettlesUpto(p: Payment, tx: { to: Address | null; input: Hex }): boolean {
  const to = tx.to?.toLowerCase()
  if (to === UPTO_PROXY_ADDRESS.toLowerCase()) return settlesUpto(p, tx.input)
  if (to !== MULTICALL3_ADDRESS.toLowerCase()) return false
  try {
    const { functionName, args } = decodeFunctionData({ abi: multicall3Abi, data: tx.input })
    if (functionName !== 'aggregate3') return false
    return args[0].some(
      (c) => c.target.toLowerCase() === UPTO_PROXY_ADDRESS.toLowerCase() && settlesUpto(p, c.callData),
    )
  } catch {
    return false
  }
}

export const uptoSettlement: RelayerSettlement = {
  kind: 'relayer',
  scheme: 'upto',

  // smart-wallet signatures go as they are (Permit2 asks an owner with code, ERC-1271), ERC-6492
  // wrappers unwrapped as for exact: the batch deploys the wallet first
  call: (p) => ({
    target: UPTO_PROXY_ADDRESS,
    callData: encodeFunctionData({
      abi: uptoProxyAbi,
      functionName: 'settle',
      args: [
        {
          permitted: { token: getAddress(p.asset), amount: BigInt(p.max_value ?? p.value) },
          nonce: BigInt(p.nonce),
          deadline: BigInt(p.valid_before),
        },
        BigInt(p.value),
        getAddress(p.payer),
        { to: getAddress(p.pay_to), facilitator: getAddress(p.facilitator!), validAfter: BigInt(p.valid_after) },
        innerSignature(p.signature as Hex),
      ],
    }),
  }),

  usedQuery: (p) => ({
    contract: {
      address: PERMIT2_ADDRESS,
      abi: permit2Abi,
      functionName: 'nonceBitmap',
      args: [getAddress(p.payer), BigInt(p.nonce) >> 8n],
    },
    used: (result) => permit2NonceUsed(result as bigint, BigInt(p.nonce)),
  }),

  usedInLogs(_asset, logs) {
    const out = new Set<string>()
    for (const e of parseEventLogs({ abi: [uptoSettledEvent], logs, strict: false })) {
      if (e.address.toLowerCase() !== UPTO_PROXY_ADDRESS.toLowerCase() || !e.args.owner || e.args.nonce === undefined)
        continue
      out.add(authorizationKey(e.args.owner, toHex(e.args.nonce, { size: 32 })))
    }
    return out
  },

  /**
   * A transaction to the upto proxy itself, one payment each (as the reference proxy on public chains
   * requires): it succeeded, it was sent to the proxy, and the token logged p's transfer (payer to
   * pay_to, the actual charge). No proxy event is needed: the reference logs none that names the
   * payment.
   */
  settledWithoutLog(p, receipt) {
    if (receipt.status !== 'success') return false
    if (receipt.to?.toLowerCase() !== UPTO_PROXY_ADDRESS.toLowerCase()) return false
    return parseEventLogs({ abi: usdcAbi, eventName: 'Transfer', logs: receipt.logs, strict: false }).some(
      (e) =>
        e.address.toLowerCase() === p.asset.toLowerCase() &&
        e.args.from?.toLowerCase() === p.payer.toLowerCase() &&
        e.args.to?.toLowerCase() === p.pay_to.toLowerCase() &&
        e.args.value === BigInt(p.value),
    )
  },

  async findOutcome(client, asset, p, range) {
    for (const { fromBlock, toBlock } of blockChunks(range)) {
      const settled = await client.getContractEvents({
        address: UPTO_PROXY_ADDRESS,
        abi: [uptoSettledEvent],
        eventName: 'UptoSettled',
        args: { owner: getAddress(p.payer), nonce: BigInt(p.nonce) },
        fromBlock,
        toBlock,
      })
      if (settled[0]?.transactionHash) return { kind: 'used', txHash: settled[0].transactionHash }
    }
    // the reference proxy (public chains) logs no UptoSettled: the token's transfers from the payer
    // to the payee for the charge, each transaction read to see whether it settled this payment
    for (const { fromBlock, toBlock } of blockChunks(range)) {
      const transfers = await client.getContractEvents({
        address: getAddress(asset),
        abi: usdcAbi,
        eventName: 'Transfer',
        args: { from: getAddress(p.payer), to: getAddress(p.pay_to) },
        fromBlock,
        toBlock,
      })
      for (const e of transfers) {
        if (e.args.value !== BigInt(p.value) || !e.transactionHash) continue
        const tx = await client.getTransaction({ hash: e.transactionHash })
        if (transactionSettlesUpto(p, tx)) return { kind: 'used', txHash: e.transactionHash }
      }
    }
    return { kind: 'unknown' }
  },

  path: (client) => uptoSettlementPath(client),

  // only the facilitator the witness names may call the proxy for it
  pinned: { relayerOf: (p) => p.facilitator, otherRelayerReason: 'upto_other_facilitator' },

  absentReason: 'upto_proxy_missing',

  describePath: (path) =>
    path === 'absent'
      ? {
          level: 'error',
          msg: 'settlement: no upto proxy at its canonical address on this chain; upto payments wait unsettled (turn UPTO_SCHEME off, or use a chain that has it)',
          extra: { proxy: UPTO_PROXY_ADDRESS },
        }
      : {
          level: 'info',
          msg:
            path === 'batch'
              ? 'settlement: upto payments settle in the Multicall3 batches'
              : 'settlement: upto payments settle one transaction per payment',
          extra: { path },
        },
}

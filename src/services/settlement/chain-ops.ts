import {
  BaseError,
  decodeErrorResult,
  encodeFunctionData,
  getAddress,
  type Address,
  type Hex,
  type Log,
  type PublicClient,
} from 'viem'
import { canDeploy, parseErc6492, type Erc6492Parts } from '../../chain/contract-signature.js'
import { MULTICALL3_ADDRESS, multicall3Abi } from '../../chain/multicall3-abi.js'
import { uptoSettleErrors } from '../../chain/permit2.js'
import { usdcAbi } from '../../chain/usdc-abi.js'
import type { Payment } from '../../db/database.js'
import { RELAYER_SETTLEMENTS, relayerSettlement } from '../../schemes/settlements.js'
import { authorizationKey, type AuthorizationOutcome } from '../../seam/types.js'

export { transferCallData } from '../../schemes/exact/settlement.js'

/** Reasons a payment fails to settle; the ones in BLOCKING_REASONS block the payer. */
export type FailureReason =
  | 'expired'
  | 'insufficient_funds'
  | 'authorization_canceled'
  | 'authorization_already_used'
  | 'invalid_signature'
  | 'transfer_failed'
export const BLOCKING_REASONS: ReadonlySet<string> = new Set([
  'insufficient_funds',
  'authorization_canceled',
  'authorization_already_used',
])

export const paymentAuthKey = (p: Pick<Payment, 'payer' | 'nonce'>) => authorizationKey(p.payer, p.nonce)

/**
 * The call that settles one payment in a batch, as its scheme builds it (src/schemes/settlements.ts;
 * `asset`: the batch's token).
 */
export function settleCall(p: Payment, asset: string = p.asset): { target: Address; callData: Hex } {
  return relayerSettlement(p.scheme).call(p, asset)
}

/** Factory calls that deploy payers' wallets, by lower-case wallet address. */
export type WalletDeployments = ReadonlyMap<string, Erc6492Parts>

/**
 * The ERC-6492 payers among `payments` whose wallets have no code yet, each with the factory call
 * (from its first payment) that deploys it. One getCode per such payer; none for anyone else.
 */
export async function walletDeployments(client: PublicClient, payments: Payment[]): Promise<WalletDeployments> {
  const wrapped = new Map<string, Erc6492Parts>()
  for (const p of payments) {
    const parts = parseErc6492(p.signature as Hex)
    if (parts && canDeploy(parts) && !wrapped.has(p.payer)) wrapped.set(p.payer, parts)
  }
  const out = new Map<string, Erc6492Parts>()
  await Promise.all(
    [...wrapped].map(async ([payer, parts]) => {
      const code = await client.getCode({ address: getAddress(payer) })
      if (!code || code === '0x') out.set(payer, parts)
    }),
  )
  return out
}

/**
 * The aggregate3 calls of a batch: first one factory call per wallet still to deploy (failure
 * allowed: a wallet deployed meanwhile only makes its transfer go straight to ERC-1271), then one
 * transfer per payment. `transferAt[i]` is the index of payment i's transfer among the calls.
 * `strict`: the transfers may not fail (for the gas estimate only, see `aggregate3Data`).
 */
function batchCalls(asset: string, payments: Payment[], deployments: WalletDeployments = new Map(), strict = false) {
  const calls: Array<{ target: Address; allowFailure: boolean; callData: Hex }> = []
  for (const payer of new Set(payments.map((p) => p.payer))) {
    const d = deployments.get(payer)
    if (d) calls.push({ target: getAddress(d.factory), allowFailure: true, callData: d.factoryData })
  }
  const transferAt = payments.map((p) => calls.push({ ...settleCall(p, asset), allowFailure: !strict }) - 1)
  return { calls, transferAt }
}

/**
 * The batch's calldata. With `strict`, for the gas estimate: while a transfer may fail, the node
 * finds the least gas at which the batch *succeeds*, which can starve a deeply nested transfer
 * (an upto payment of a smart wallet: Multicall3, the proxy, Permit2, the wallet's ERC-1271 check,
 * then the token) into failing inside a batch that still succeeds; a strict batch reverts instead,
 * so its estimate covers every transfer.
 */
export function aggregate3Data(
  asset: string,
  payments: Payment[],
  deployments?: WalletDeployments,
  opts: { strict?: boolean } = {},
): Hex {
  return encodeFunctionData({
    abi: multicall3Abi,
    functionName: 'aggregate3',
    args: [batchCalls(asset, payments, deployments, opts.strict).calls],
  })
}

/**
 * Whether each payment's authorization is used, in one eth_call through Multicall3: each asks what
 * its scheme reads (exact: the token's authorizationState; upto: Permit2's nonce bitmap).
 */
export async function authorizationStates(
  client: PublicClient,
  asset: string,
  payments: Payment[],
): Promise<boolean[]> {
  if (payments.length === 0) return []
  const queries = payments.map((p) => relayerSettlement(p.scheme).usedQuery(p, asset))
  const out = (await client.multicall({
    multicallAddress: MULTICALL3_ADDRESS,
    allowFailure: false,
    contracts: queries.map((q) => q.contract) as Parameters<PublicClient['multicall']>[0]['contracts'],
  })) as unknown[]
  return out.map((r, i) => queries[i]!.used(r))
}

export async function balancesOf(client: PublicClient, asset: string, payers: string[]): Promise<bigint[]> {
  if (payers.length === 0) return []
  const address = getAddress(asset)
  return client.multicall({
    multicallAddress: MULTICALL3_ADDRESS,
    allowFailure: false,
    contracts: payers.map((p) => ({
      address,
      abi: usdcAbi,
      functionName: 'balanceOf' as const,
      args: [getAddress(p)] as const,
    })),
  }) as Promise<bigint[]>
}

/** Simulates the batch; per payment, undefined when it would succeed, else the revert message. */
export async function simulateBatch(
  client: PublicClient,
  from: Address,
  asset: string,
  payments: Payment[],
  deployments?: WalletDeployments,
): Promise<Array<string | undefined>> {
  const { calls, transferAt } = batchCalls(asset, payments, deployments)
  const { result } = await client.simulateContract({
    account: from,
    address: MULTICALL3_ADDRESS,
    abi: multicall3Abi,
    functionName: 'aggregate3',
    args: [calls],
  })
  return transferAt.map((i) => (result[i]!.success ? undefined : revertMessage(result[i]!.returnData)))
}

function revertMessage(data: Hex): string {
  try {
    const d = decodeErrorResult({ abi: uptoSettleErrors, data })
    return d.errorName === 'Error' ? String(d.args?.[0] ?? d.errorName) : d.errorName
  } catch {
    return data === '0x' ? 'reverted' : data.slice(0, 10)
  }
}

/** Turns a revert message into a reason code. */
export function reasonFromRevert(msg: string): FailureReason {
  const m = msg.toLowerCase()
  if (m.includes('exceeds balance')) return 'insufficient_funds'
  if (m.includes('expired')) return 'expired'
  if (m.includes('used or canceled')) return 'authorization_already_used'
  if (m.includes('invalid signature')) return 'invalid_signature'
  // the upto proxy's and Permit2's (solmate's failed transferFrom: no balance or allowance)
  if (m === 'invalidnonce') return 'authorization_already_used'
  if (m === 'signatureexpired') return 'expired'
  if (m === 'invalidsigner' || m === 'invalidsignature' || m === 'invalidsignaturelength') return 'invalid_signature'
  if (m.includes('transfer_from_failed')) return 'insufficient_funds'
  return 'transfer_failed'
}

/**
 * The authorizations one receipt's logs show used, keyed by (authorizer, nonce), whatever their
 * scheme (exact: the token's AuthorizationUsed; upto: our proxy's UptoSettled).
 */
export function usedAuthorizations(asset: string, logs: Log[]): Set<string> {
  const out = new Set<string>()
  for (const s of RELAYER_SETTLEMENTS) for (const k of s.usedInLogs(asset, logs)) out.add(k)
  return out
}

/**
 * Simulates the settlement call of one payment in a transaction of its own, sent by `from` (upto:
 * its facilitator); undefined when it would succeed, else the revert message (as simulateBatch
 * names it).
 */
export async function simulateDirect(client: PublicClient, from: Address, p: Payment): Promise<string | undefined> {
  const { target, callData } = settleCall(p)
  try {
    await client.call({ account: from, to: target, data: callData })
    return undefined
  } catch (err) {
    const raw = err instanceof BaseError ? err.walk((e) => typeof (e as { data?: unknown }).data === 'string') : null
    const data = (raw as { data?: Hex } | null)?.data
    return data ? revertMessage(data) : 'reverted'
  }
}

/** Blocks per eth_getLogs request when the caller names none (SETTLEMENT_LOG_CHUNK_BLOCKS's default). */
export const DEFAULT_LOG_CHUNK_BLOCKS = 2_000

export interface OutcomeSearch {
  /** first block to search (a settlement batch's from_block); default: `lookbackBlocks` before the latest */
  fromBlock?: bigint
  lookbackBlocks?: bigint
  /** blocks per eth_getLogs request: RPC providers cap the range of one request */
  chunkBlocks?: bigint | number
}

/**
 * What happened to an authorization the chain reports as used: the mined transaction that used it
 * (proof enough to call it settled), or that it was canceled, or nothing we can find; its scheme
 * knows where to look. Logs are read oldest first, `chunkBlocks` at a time; an RPC error is thrown
 * to the caller.
 *
 * @example
 *   await findAuthorizationOutcome(client, usdc, payment, { fromBlock: batch.from_block, chunkBlocks: 2_000 })
 */
export async function findAuthorizationOutcome(
  client: PublicClient,
  asset: string,
  p: Payment,
  search: OutcomeSearch = {},
): Promise<AuthorizationOutcome> {
  const lookback = search.lookbackBlocks ?? 50_000n
  const chunk = BigInt(search.chunkBlocks ?? DEFAULT_LOG_CHUNK_BLOCKS)
  if (chunk < 1n) throw new Error('chunkBlocks must be at least 1')
  const latest = await client.getBlockNumber({ cacheTime: 0 })
  const fromBlock = search.fromBlock ?? (latest > lookback ? latest - lookback : 0n)
  return relayerSettlement(p.scheme).findOutcome(client, asset, p, { fromBlock, toBlock: latest, chunk })
}

import {
  BaseError,
  decodeErrorResult,
  decodeFunctionData,
  encodeFunctionData,
  getAddress,
  parseEventLogs,
  parseSignature,
  size,
  type Address,
  type Hex,
  type Log,
  type PublicClient,
  type TransactionReceipt,
  toHex,
} from 'viem'
import { canDeploy, innerSignature, parseErc6492, type Erc6492Parts } from '../../chain/contract-signature.js'
import { MULTICALL3_ADDRESS, multicall3Abi } from '../../chain/multicall3-abi.js'
import {
  PERMIT2_ADDRESS,
  permit2Abi,
  permit2NonceUsed,
  UPTO_PROXY_ADDRESS,
  uptoProxyAbi,
  uptoSettledEvent,
  uptoSettleErrors,
} from '../../chain/permit2.js'
import { usdcAbi } from '../../chain/usdc-abi.js'
import type { Payment } from '../../db/database.js'

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

const authKey = (authorizer: string, nonce: string) => `${authorizer.toLowerCase()}:${nonce.toLowerCase()}`
export const paymentAuthKey = (p: Pick<Payment, 'payer' | 'nonce'>) => authKey(p.payer, p.nonce)

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

/**
 * The call that settles one payment in a batch: `exact`, the token's transferWithAuthorization;
 * `upto`, the upto proxy's `settle` for the actual charge (`value`) under the signed maximum
 * (`max_value`), sent by the witness's facilitator (the batch's relayer, through Multicall3).
 * Smart-wallet signatures go as they are (Permit2 asks an owner with code, ERC-1271), ERC-6492
 * wrappers unwrapped as for exact: the batch deploys the wallet first.
 */
export function settleCall(p: Payment, asset: string = p.asset): { target: Address; callData: Hex } {
  if (p.scheme !== 'upto') return { target: getAddress(asset), callData: transferCallData(p) }
  return {
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
  }
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
 * Whether each payment's authorization is used, in one eth_call through Multicall3: the token's
 * authorizationState for `exact`, Permit2's nonce bitmap for `upto`.
 */
export async function authorizationStates(
  client: PublicClient,
  asset: string,
  payments: Payment[],
): Promise<boolean[]> {
  if (payments.length === 0) return []
  const address = getAddress(asset)
  const out = (await client.multicall({
    multicallAddress: MULTICALL3_ADDRESS,
    allowFailure: false,
    contracts: payments.map((p) =>
      p.scheme === 'upto'
        ? {
            address: PERMIT2_ADDRESS,
            abi: permit2Abi,
            functionName: 'nonceBitmap' as const,
            args: [getAddress(p.payer), BigInt(p.nonce) >> 8n] as const,
          }
        : {
            address,
            abi: usdcAbi,
            functionName: 'authorizationState' as const,
            args: [getAddress(p.payer), p.nonce as Hex] as const,
          },
    ),
  })) as Array<boolean | bigint>
  return out.map((r, i) => (typeof r === 'bigint' ? permit2NonceUsed(r, BigInt(payments[i]!.nonce)) : r))
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

/** AuthorizationUsed logs of one receipt (and the upto proxy's UptoSettled), keyed by (authorizer, nonce) */
export function usedAuthorizations(asset: string, logs: Log[]): Set<string> {
  const events = parseEventLogs({ abi: usdcAbi, eventName: 'AuthorizationUsed', logs, strict: false })
  const out = new Set<string>()
  for (const e of events) {
    if (e.address.toLowerCase() !== asset.toLowerCase() || !e.args.authorizer || !e.args.nonce) continue
    out.add(authKey(e.args.authorizer, e.args.nonce))
  }
  for (const e of parseEventLogs({ abi: [uptoSettledEvent], logs, strict: false })) {
    if (e.address.toLowerCase() !== UPTO_PROXY_ADDRESS.toLowerCase() || !e.args.owner || e.args.nonce === undefined)
      continue
    out.add(authKey(e.args.owner, toHex(e.args.nonce, { size: 32 })))
  }
  return out
}

/**
 * Whether a mined transaction settled upto payment `p` by calling the upto proxy itself, one
 * payment per transaction (as the reference proxy on public chains requires, settlement.ts
 * `uptoSettlementPath`): it succeeded, it was sent to the proxy, and the token logged p's transfer
 * (payer to pay_to, the actual charge). No proxy event is needed: the reference logs none that
 * names the payment.
 */
export function settledDirectly(p: Payment, receipt: TransactionReceipt): boolean {
  if (p.scheme !== 'upto' || receipt.status !== 'success') return false
  if (receipt.to?.toLowerCase() !== UPTO_PROXY_ADDRESS.toLowerCase()) return false
  return parseEventLogs({ abi: usdcAbi, eventName: 'Transfer', logs: receipt.logs, strict: false }).some(
    (e) =>
      e.address.toLowerCase() === p.asset.toLowerCase() &&
      e.args.from?.toLowerCase() === p.payer.toLowerCase() &&
      e.args.to?.toLowerCase() === p.pay_to.toLowerCase() &&
      e.args.value === BigInt(p.value),
  )
}

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
export function transactionSettlesUpto(p: Payment, tx: { to: Address | null; input: Hex }): boolean {
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

/**
 * Simulates the upto proxy's `settle` of one payment sent by `from` (its facilitator); undefined
 * when it would succeed, else the revert message (as simulateBatch names it).
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
 * What happened to an authorization the token reports as used: the mined transaction that used it
 * (proof enough to call it settled), or that it was canceled, or nothing we can find. Logs are read
 * oldest first, `chunkBlocks` at a time; an RPC error is thrown to the caller.
 *
 * @example
 *   await findAuthorizationOutcome(client, usdc, payment, { fromBlock: batch.from_block, chunkBlocks: 2_000 })
 */
export async function findAuthorizationOutcome(
  client: PublicClient,
  asset: string,
  p: Payment,
  search: OutcomeSearch = {},
): Promise<{ kind: 'used'; txHash: Hex } | { kind: 'canceled' } | { kind: 'unknown' }> {
  const lookback = search.lookbackBlocks ?? 50_000n
  const chunk = BigInt(search.chunkBlocks ?? DEFAULT_LOG_CHUNK_BLOCKS)
  if (chunk < 1n) throw new Error('chunkBlocks must be at least 1')
  const latest = await client.getBlockNumber({ cacheTime: 0 })
  const start = search.fromBlock ?? (latest > lookback ? latest - lookback : 0n)
  const address = getAddress(asset)
  if (p.scheme === 'upto') {
    for (let fromBlock = start; fromBlock <= latest; fromBlock += chunk) {
      const toBlock = fromBlock + chunk - 1n < latest ? fromBlock + chunk - 1n : latest
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
    for (let fromBlock = start; fromBlock <= latest; fromBlock += chunk) {
      const toBlock = fromBlock + chunk - 1n < latest ? fromBlock + chunk - 1n : latest
      const transfers = await client.getContractEvents({
        address,
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
  }
  // filtered here rather than by topic: some nodes mishandle an indexed bytes32 topic filter
  const authorizer = getAddress(p.payer)
  const mine = (e: { args: { authorizer?: string; nonce?: string } }) =>
    e.args.authorizer?.toLowerCase() === authorizer.toLowerCase() &&
    e.args.nonce?.toLowerCase() === p.nonce.toLowerCase()
  // an authorization is either used or canceled, never both: the first chunk with either decides
  for (let fromBlock = start; fromBlock <= latest; fromBlock += chunk) {
    const toBlock = fromBlock + chunk - 1n < latest ? fromBlock + chunk - 1n : latest
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
}

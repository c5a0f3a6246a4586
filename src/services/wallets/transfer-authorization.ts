// An EIP-3009 TransferWithAuthorization of USDC from a custodial wallet, as top-ups and withdrawals
// send one: signed and stored first, then submitted by a settlement relayer, which records the
// transaction before broadcasting it; its receipt says whether the authorization was used.
import { randomBytes } from 'node:crypto'
import { getAddress, type Address, type Hex, type LocalAccount, type PublicClient, type TransactionReceipt } from 'viem'
import { broadcast, signRelayerTx, type Relayer } from '../../chain/relayer.js'
import { eip3009Types, usdcAbi } from '../../chain/usdc-abi.js'
import type { Config } from '../../config.js'
import type { Payment } from '../../db/database.js'
import { findAuthorizationOutcome, usedAuthorizations } from '../settlement/chain-ops.js'

/** The stored fields of a signed authorization, as the topups and withdrawals rows name them. */
export interface SignedAuthorization {
  auth_nonce: Hex
  valid_after: string
  valid_before: string
  signature: Hex
}

/**
 * A fresh authorization of `value` from `account` to `to`, valid from 10 minutes before `nowS`
 * for `ttlS` seconds, with a random nonce.
 *
 * @example
 *   const auth = await signTransferAuthorization(account, config.chain, agentAddress, 1_000_000n, nowS, 3600)
 */
export async function signTransferAuthorization(
  account: LocalAccount,
  chain: Config['chain'],
  to: string,
  value: bigint,
  nowS: number,
  ttlS: number,
): Promise<SignedAuthorization> {
  const message = {
    from: account.address,
    to: getAddress(to),
    value,
    validAfter: BigInt(nowS - 600),
    validBefore: BigInt(nowS + ttlS),
    nonce: `0x${randomBytes(32).toString('hex')}` as Hex,
  }
  const signature = await account.signTypedData({
    domain: {
      name: chain.usdc.name,
      version: chain.usdc.version,
      chainId: chain.chainId,
      verifyingContract: getAddress(chain.usdc.address),
    },
    types: { TransferWithAuthorization: eip3009Types.TransferWithAuthorization },
    primaryType: 'TransferWithAuthorization',
    message,
  })
  return {
    auth_nonce: message.nonce,
    valid_after: message.validAfter.toString(),
    valid_before: message.validBefore.toString(),
    signature,
  }
}

/** A stored authorization: who pays whom, and the signed fields. */
export interface StoredAuthorization {
  payer: string
  payTo: string
  value: string
  validAfter: string | null
  validBefore: string | null
  nonce: string | null
  signature: string | null
}

/** The stored authorization as the settlement calldata builder and outcome search expect it. */
export function authorizationPayment(a: StoredAuthorization): Payment {
  return {
    scheme: 'exact',
    payer: a.payer,
    pay_to: a.payTo,
    value: a.value,
    valid_after: a.validAfter,
    valid_before: a.validBefore,
    nonce: a.nonce,
    signature: a.signature,
  } as unknown as Payment
}

/** Whether the transaction succeeded and used `payer`'s authorization `nonce`. */
export function usedIn(usdc: Address, receipt: TransactionReceipt, payer: string, nonce: string): boolean {
  return (
    receipt.status === 'success' &&
    usedAuthorizations(usdc, receipt.logs).has(`${payer.toLowerCase()}:${nonce.toLowerCase()}`)
  )
}

export interface RelaySettings {
  usdc: Address
  chainId: number
  feeCap: bigint
  receiptTimeoutMs: number
  /** the error a failed gas estimate (the transfer would revert) is thrown as */
  estimateFailed(err: Error): Error
  /** records the signed transaction before it is broadcast, so a crash leaves a hash to look for */
  record(hash: Hex, relayer: string): Promise<void>
}

/**
 * Submits the authorization's transfer (`data`, from transferCallData) from `relayer` (held by the
 * caller): gas estimated, signed, recorded, broadcast; then waits for its receipt (null when it
 * did not come in time).
 */
export async function relayAuthorization(
  chain: PublicClient,
  relayer: Relayer,
  data: Hex,
  s: RelaySettings,
): Promise<{ hash: Hex; receipt: TransactionReceipt | null }> {
  let gas: bigint
  try {
    gas = await chain.estimateGas({ account: relayer.address, to: s.usdc, data })
  } catch (err) {
    throw s.estimateFailed(err as Error)
  }
  const signed = await signRelayerTx(chain, relayer, {
    to: s.usdc,
    data,
    gas: (gas * 13n) / 10n,
    chainId: s.chainId,
    maxFeePerGasCap: s.feeCap,
  })
  await s.record(signed.hash, relayer.address.toLowerCase())
  await broadcast(chain, signed.raw)
  const receipt = await chain
    .waitForTransactionReceipt({ hash: signed.hash, timeout: s.receiptTimeoutMs })
    .catch(() => null)
  return { hash: signed.hash, receipt }
}

/** What the chain says of a stored authorization (see authorizationOnChain). */
export type ChainOutcome =
  | { kind: 'unused' }
  | { kind: 'used'; txHash: Hex; blockNumber: bigint }
  | { kind: 'canceled' }
  /** used, by a transaction not found in the logs (yet) */
  | { kind: 'unknown' }

/**
 * Whether the authorization is used on the chain and, when it is, the transaction that used it
 * (searched in the logs, `chunkBlocks` at a time) or its cancellation.
 */
export async function authorizationOnChain(
  chain: PublicClient,
  usdc: Address,
  payment: Payment,
  chunkBlocks: number | undefined,
): Promise<ChainOutcome> {
  const used = await chain.readContract({
    address: usdc,
    abi: usdcAbi,
    functionName: 'authorizationState',
    args: [getAddress(payment.payer), payment.nonce as Hex],
  })
  if (!used) return { kind: 'unused' }
  const outcome = await findAuthorizationOutcome(chain, usdc, payment, { chunkBlocks })
  if (outcome.kind !== 'used') return outcome
  const receipt = await chain.getTransactionReceipt({ hash: outcome.txHash })
  return { kind: 'used', txHash: outcome.txHash, blockNumber: receipt.blockNumber }
}

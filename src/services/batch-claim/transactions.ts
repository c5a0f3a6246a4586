/**
 * The batch-settlement transactions the worker sends (claim, settle), each recorded in
 * `batch_transactions` before it is broadcast and decided from its receipt. The amount recorded on
 * a decision is what the receipt's events say moved (`Claimed`, `Settled`), not what was planned:
 * a claim re-sent for a target already reached claims 0, and the books say 0.
 */
import { randomUUID } from 'node:crypto'
import type { Kysely } from 'kysely'
import { parseEventLogs, type Address, type Hex, type PublicClient, type TransactionReceipt } from 'viem'
import type { Logger } from 'pino'
import type { Database } from '../../db/database.js'
import { batchSettlementAbi } from '../../chain/batch-settlement/abi.js'
import { broadcast, signRelayerTx, type createRelayerLock, type Relayer } from '../../chain/relayer.js'
import type { BatchTxHooks } from './test-hooks.js'

const RECEIPT_TIMEOUT_MS = 30_000

export interface TxContext {
  db: Kysely<Database>
  chain: PublicClient
  chainId: number
  network: string
  contract: Address
  relayers: readonly Relayer[]
  lock: ReturnType<typeof createRelayerLock>
  maxFeePerGasWei: bigint
  stuckSeconds: number
  log: Pick<Logger, 'info' | 'warn' | 'error'>
  hooks: BatchTxHooks
}

/** `refund`: sent by the proxy (src/schemes/batch-settlement/refund.ts), decided here when its receipt came late */
export type TxKind = 'claim' | 'settle' | 'refund'

export interface DecidedTx {
  id: string
  kind: TxKind
  hash: Hex
  status: 'confirmed' | 'reverted'
  /** what moved, from the receipt's events */
  amount: bigint
  channels: unknown
}

/** What a receipt says moved: the Claimed, Settled or Refunded amounts in its logs from the contract. */
function movedAmount(kind: TxKind, receipt: TransactionReceipt, contract: Address): bigint {
  const logs = receipt.logs.filter((l) => l.address.toLowerCase() === contract.toLowerCase())
  if (kind === 'claim')
    return parseEventLogs({ abi: batchSettlementAbi, eventName: 'Claimed', logs }).reduce(
      (s, e) => s + e.args.claimAmount,
      0n,
    )
  if (kind === 'refund')
    return parseEventLogs({ abi: batchSettlementAbi, eventName: 'Refunded', logs }).reduce(
      (s, e) => s + e.args.amount,
      0n,
    )
  return parseEventLogs({ abi: batchSettlementAbi, eventName: 'Settled', logs }).reduce((s, e) => s + e.args.amount, 0n)
}

async function decide(
  ctx: TxContext,
  row: { id: string; kind: TxKind; channels: unknown },
  hash: Hex,
  receipt: TransactionReceipt,
): Promise<DecidedTx> {
  const status = receipt.status === 'success' ? 'confirmed' : 'reverted'
  const amount = status === 'confirmed' ? movedAmount(row.kind, receipt, ctx.contract) : 0n
  await ctx.db
    .updateTable('batch_transactions')
    .set({ status, amount: amount.toString(), updated_at: new Date() })
    .where('id', '=', row.id)
    .where('status', 'in', ['pending', 'sent'])
    .execute()
  return { id: row.id, kind: row.kind, hash, status, amount, channels: row.channels }
}

/**
 * Sends one contract call from the first free relayer: gas estimated (a call that would revert
 * throws before anything is recorded), signed, recorded `pending` with its hash and nonce, broadcast,
 * marked `sent`, and decided from its receipt. Null when no relayer was free; a receipt that does
 * not come within the timeout leaves the row `sent` for `resolveOpen`.
 */
export async function sendRecorded(
  ctx: TxContext,
  call: { kind: TxKind; data: Hex; channels: unknown; plannedAmount: bigint },
): Promise<DecidedTx | 'unresolved' | null> {
  for (const relayer of ctx.relayers) {
    const held = await ctx.lock.hold(relayer.address, async () => {
      const gas = await ctx.chain.estimateGas({ account: relayer.address, to: ctx.contract, data: call.data })
      const tx = await signRelayerTx(ctx.chain, relayer, {
        to: ctx.contract,
        data: call.data,
        gas: (gas * 13n) / 10n,
        chainId: ctx.chainId,
        maxFeePerGasCap: ctx.maxFeePerGasWei,
      })
      const id = randomUUID()
      await ctx.db
        .insertInto('batch_transactions')
        .values({
          id,
          kind: call.kind,
          network: ctx.network,
          contract: ctx.contract.toLowerCase(),
          relayer: relayer.address.toLowerCase(),
          tx_nonce: tx.nonce,
          tx_hash: tx.hash,
          status: 'pending',
          channels: JSON.stringify(call.channels),
          amount: call.plannedAmount.toString(),
        })
        .execute()
      await ctx.hooks.afterRecord?.()
      await broadcast(ctx.chain, tx.raw)
      await ctx.db
        .updateTable('batch_transactions')
        .set({ status: 'sent', updated_at: new Date() })
        .where('id', '=', id)
        .where('status', '=', 'pending')
        .execute()
      await ctx.hooks.afterSend?.()
      return { id, hash: tx.hash }
    })
    if (!held) continue
    const { id, hash } = held.value
    ctx.log.info({ kind: call.kind, tx: hash }, 'batch-settlement transaction sent')
    let receipt: TransactionReceipt
    try {
      receipt = await ctx.chain.waitForTransactionReceipt({ hash, timeout: RECEIPT_TIMEOUT_MS, pollingInterval: 250 })
    } catch {
      ctx.log.warn(
        { kind: call.kind, tx: hash },
        'batch-settlement transaction: no receipt yet; decided on a later run',
      )
      return 'unresolved'
    }
    return decide(ctx, { id, kind: call.kind, channels: call.channels }, hash, receipt)
  }
  return null
}

/**
 * Decides the recorded transactions left `pending` or `sent` (a worker killed, a receipt that came
 * late): a receipt decides it; a transaction the node still holds waits; one the node does not know
 * is `dropped` once its relayer's nonce was used by another transaction, or after `stuckSeconds` (it
 * was recorded and never broadcast: only the dead process had its signed bytes).
 */
export async function resolveOpen(ctx: TxContext): Promise<DecidedTx[]> {
  const open = await ctx.db
    .selectFrom('batch_transactions')
    .selectAll()
    .where('status', 'in', ['pending', 'sent'])
    .where('network', '=', ctx.network)
    .where('contract', '=', ctx.contract.toLowerCase())
    .where('kind', 'in', ['claim', 'settle', 'refund'])
    .orderBy('created_at')
    .execute()
  const decided: DecidedTx[] = []
  for (const row of open) {
    const hash = row.tx_hash as Hex
    const kind = row.kind as TxKind
    const receipt = await ctx.chain.getTransactionReceipt({ hash }).catch(() => null)
    if (receipt) {
      decided.push(await decide(ctx, { id: row.id, kind, channels: row.channels }, hash, receipt))
      continue
    }
    if (await ctx.chain.getTransaction({ hash }).catch(() => null)) continue
    const used = await ctx.chain.getTransactionCount({ address: row.relayer as Address, blockTag: 'latest' })
    const old = Date.now() - row.created_at.getTime() > ctx.stuckSeconds * 1000
    if (used > (row.tx_nonce ?? Number.MAX_SAFE_INTEGER) || old) {
      await ctx.db
        .updateTable('batch_transactions')
        .set({
          status: 'dropped',
          amount: '0',
          error: used > (row.tx_nonce ?? 0) ? 'its nonce was used by another transaction' : 'never broadcast',
          updated_at: new Date(),
        })
        .where('id', '=', row.id)
        .where('status', 'in', ['pending', 'sent'])
        .execute()
      ctx.log.warn({ kind, tx: hash }, 'batch-settlement transaction dropped; its channels are claimed again')
    }
  }
  return decided
}

import type { Logger } from 'pino'
import type { Hex } from 'viem'
import type { CoreDeps as Deps } from '../../core-deps.js'
import type { Payment } from '../../db/database.js'
import type { RelayerSettlement, SchemeName, SettlementPath } from '../../seam/types.js'
import { createPayerCredit, type PayerCredit } from '../../ledger/payer-credit.js'
import { processLogger } from '../../logger.js'
import { MAX_HANDLER_TIMEOUT_MS } from '../../pool/handler-contract.js'
import { SETTLEMENT_EXPIRY_MARGIN_SECONDS } from '../../x402/verify-requirements.js'
import { MAX_UPSTREAM_TIMEOUT_MS } from '../publishing/upstream-config.js'
import { createFacilitatorClient, type FacilitatorClient } from './facilitator.js'
import { createRelayerLock, relayersFromKeys, type Relayer } from '../../chain/relayer.js'

/** Crash points for tests: a hook that throws stops the batch exactly there, as a kill would. */
export interface SettlementHooks {
  /** payments claimed (settling), nothing recorded */
  afterClaim?(payments: Payment[]): void | Promise<void>
  /** batch (hash, nonce, raw tx) recorded, not broadcast */
  beforeSend?(batch: { id: string; txHash: Hex }): void | Promise<void>
  /** broadcast, receipt not awaited */
  afterSend?(batch: { id: string; txHash: Hex }): void | Promise<void>
}

export interface SettlerOptions {
  batchSize?: number
  /** an authorization expiring within this many seconds is not submitted */
  expiryMarginS?: number
  /** default: config.settlement.maxFeePerGasWei (SETTLEMENT_MAX_FEE_GWEI) */
  maxFeePerGasCap?: bigint
  receiptTimeoutMs?: number
  /** how often a receipt is polled for (viem's client default is 4 s, a whole extra block or two) */
  receiptPollMs?: number
  /** a pending batch unmined this long after its last (re)signing is replaced with higher fees */
  replaceAfterMs?: number
  /** `settling` payments untouched this long with no pending batch are rechecked by the sweep */
  stuckAfterMs?: number
  /**
   * `verified` payments older than this never got an outcome from the proxy and are voided
   * (default: the longest a paid call may run, VOID_MARGIN_MS added)
   */
  voidVerifiedAfterMs?: number
  /**
   * the most gas one settlement transaction may take (default EIP-7825's per-transaction cap,
   * 2^24, which Base enforces): a batch that would need more is split
   */
  maxTxGas?: bigint
  /**
   * upto payments settled one transaction each (the reference proxy): how many are in flight at
   * once (default 16, geth's pending slots per sender); the next ones follow their receipts
   */
  directInFlight?: number
  /** blocks per eth_getLogs request (default: config.settlement.logChunkBlocks, SETTLEMENT_LOG_CHUNK_BLOCKS) */
  logChunkBlocks?: number
  /** where warnings go (default: a logger at config.logLevel); the worker passes its own */
  log?: SettlerLog
  hooks?: SettlementHooks
  relayerKeys?: readonly Hex[]
  /** SETTLEMENT_MODE=facilitator: the external facilitator (default: config.settlement.facilitatorUrl) */
  facilitator?: FacilitatorClient
}

export interface SettleStats {
  settled: number
  failed: number
  requeued: number
  batches: number
}

export const emptyStats = (): SettleStats => ({ settled: 0, failed: 0, requeued: 0, batches: 0 })

export type SettlerLog = Pick<Logger, 'info' | 'warn' | 'error'>

/** EIP-7825's per-transaction gas cap (2^24), which Base enforces: the default of `maxTxGas`. */
export const MAX_TX_GAS = 16_777_216n

/** What the sweep waits past the longest call before voiding a payment with no outcome. */
export const VOID_MARGIN_MS = 60_000

/**
 * The longest a paid call can legitimately run before the proxy records its outcome: the
 * deployment's default handler limit, the longest a hosted handler may declare, or the longest
 * upstream timeout a seller may set. A `verified` payment is voided only well after that.
 */
export function longestCallMs(handlerTimeoutMs: number): number {
  return Math.max(handlerTimeoutMs, MAX_HANDLER_TIMEOUT_MS, MAX_UPSTREAM_TIMEOUT_MS)
}

/**
 * How far before a batch's recorded block its authorizations are looked for: the block is read
 * after authorizationState said "unused", so a use by someone else in between lies just before it
 * (and a load-balanced RPC may answer from a node a few blocks behind).
 */
export const FROM_BLOCK_MARGIN = 100n

/** What the settler's parts share: the dependencies and the options, resolved once. */
export interface SettlerContext {
  deps: Deps
  batchSize: number
  marginS: number
  feeCap: bigint
  receiptTimeoutMs: number
  receiptPollMs: number
  replaceAfterMs: number
  stuckAfterMs: number
  voidAfterMs: number
  logChunkBlocks: bigint
  maxTxGas: bigint
  directInFlight: number
  hooks: SettlementHooks
  relayers: Relayer[]
  lock: ReturnType<typeof createRelayerLock>
  credit: PayerCredit
  log: SettlerLog
  facilitator: FacilitatorClient | undefined
  getChainId(): Promise<number>
  /** how this chain takes a scheme's settlement calls (read once per settler and scheme, logged) */
  pathOf(settlement: RelayerSettlement): Promise<SettlementPath>
}

export function settlerContext(deps: Deps, opts: SettlerOptions = {}): SettlerContext {
  const { config, chain } = deps
  let chainId: number | undefined
  const paths = new Map<SchemeName, Promise<SettlementPath>>()
  const log = opts.log ?? processLogger(config.logLevel)
  return {
    deps,
    batchSize: opts.batchSize ?? config.settlement.batchSize,
    marginS: opts.expiryMarginS ?? SETTLEMENT_EXPIRY_MARGIN_SECONDS,
    feeCap: opts.maxFeePerGasCap ?? config.settlement.maxFeePerGasWei,
    receiptTimeoutMs: opts.receiptTimeoutMs ?? 60_000,
    receiptPollMs: opts.receiptPollMs ?? 250,
    replaceAfterMs: opts.replaceAfterMs ?? 30_000,
    stuckAfterMs: opts.stuckAfterMs ?? 120_000,
    voidAfterMs: opts.voidVerifiedAfterMs ?? longestCallMs(config.handlers.timeoutMs) + VOID_MARGIN_MS,
    logChunkBlocks: BigInt(opts.logChunkBlocks ?? config.settlement.logChunkBlocks),
    maxTxGas: opts.maxTxGas ?? MAX_TX_GAS,
    directInFlight: Math.max(1, opts.directInFlight ?? 16),
    hooks: opts.hooks ?? {},
    relayers: relayersFromKeys(opts.relayerKeys ?? config.relayerKeys),
    lock: createRelayerLock(deps.redis, deps.key),
    credit: createPayerCredit(deps),
    // no payment signatures, raw transactions or keys go in here: ids, hashes, counts, reasons
    log,
    facilitator:
      config.settlement.mode === 'facilitator'
        ? (opts.facilitator ?? createFacilitatorClient(config.settlement.facilitatorUrl!))
        : undefined,
    async getChainId() {
      chainId ??= await chain.getChainId()
      return chainId
    },
    pathOf(settlement) {
      const known = paths.get(settlement.scheme)
      if (known) return known
      const path = settlement.path(chain).then(
        (path) => {
          const said = settlement.describePath?.(path)
          if (said) log[said.level](said.extra ?? {}, said.msg)
          return path
        },
        (err) => {
          paths.delete(settlement.scheme)
          throw err
        },
      )
      paths.set(settlement.scheme, path)
      return path
    },
  }
}

export function groupBy<T>(items: T[], key: (t: T) => string): Map<string, T[]> {
  const m = new Map<string, T[]>()
  for (const it of items) {
    const k = key(it)
    const list = m.get(k)
    if (list) list.push(it)
    else m.set(k, [it])
  }
  return m
}

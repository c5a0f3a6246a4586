// The settings and state a service that sends signed authorizations through the settlement
// relayers keeps (top-ups, withdrawals): retries with backoff, a lease per row, the process's
// relayer accounts and their lock, and its logger.
import type { Kysely } from 'kysely'
import { getAddress, type Address, type Hex, type PublicClient } from 'viem'
import { createRelayerLock, relayersFromKeys, type Relayer } from '../../chain/relayer.js'
import type { CoreDeps } from '../../core-deps.js'
import type { Database } from '../../db/database.js'

export interface SenderLogger {
  info(obj: object, msg: string): void
  error(obj: object, msg: string): void
}

/** Each service documents its defaults (topups/context.ts, withdrawals/context.ts). */
export interface SenderOptions {
  /** attempts before a row that never reached the chain is `failed` */
  maxAttempts?: number
  /** first retry delay; doubles per attempt up to maxBackoffMs */
  backoffMs?: number
  maxBackoffMs?: number
  /** how long one process owns a row while it works on it */
  leaseMs?: number
  receiptTimeoutMs?: number
  /** lifetime of a signed authorization */
  authorizationTtlS?: number
  logger?: SenderLogger
}

export interface SenderContext {
  db: Kysely<Database>
  chain: PublicClient
  config: CoreDeps['config']
  maxAttempts: number
  backoffMs: number
  maxBackoffMs: number
  leaseMs: number
  receiptTimeoutMs: number
  ttlS: number
  feeCap: bigint
  relayers: Relayer[]
  lock: ReturnType<typeof createRelayerLock>
  log: SenderLogger
  usdc: Address
}

/** The service's defaults, and the relayers and fee cap it sends with. */
export interface SenderDefaults {
  maxAttempts: number
  backoffMs: number
  maxBackoffMs: number
  leaseMs: number
  receiptTimeoutMs: number
  authorizationTtlS: number
  feeCap: bigint
  relayerKeys: readonly Hex[]
}

const silent: SenderLogger = { info: () => {}, error: () => {} }

/** The sender's context: the options, or the service's defaults where they are not given. */
export function senderContext(deps: CoreDeps, opts: SenderOptions, defaults: SenderDefaults): SenderContext {
  const { db, chain, config } = deps
  return {
    db,
    chain,
    config,
    maxAttempts: opts.maxAttempts ?? defaults.maxAttempts,
    backoffMs: opts.backoffMs ?? defaults.backoffMs,
    maxBackoffMs: opts.maxBackoffMs ?? defaults.maxBackoffMs,
    leaseMs: opts.leaseMs ?? defaults.leaseMs,
    receiptTimeoutMs: opts.receiptTimeoutMs ?? defaults.receiptTimeoutMs,
    ttlS: opts.authorizationTtlS ?? defaults.authorizationTtlS,
    feeCap: defaults.feeCap,
    relayers: relayersFromKeys(defaults.relayerKeys),
    lock: createRelayerLock(deps.redis, deps.key),
    log: opts.logger ?? silent,
    usdc: getAddress(config.chain.usdc.address),
  }
}

/** The next retry's delay after `attempts` failed attempts: doubling from backoffMs, capped at maxBackoffMs. */
export const retryDelay = (ctx: SenderContext, attempts: number) =>
  Math.min(ctx.backoffMs * 2 ** (attempts - 1), ctx.maxBackoffMs)

/** The sender's part of relayAuthorization's settings (transfer-authorization.ts). */
export const relayVia = (ctx: SenderContext) => ({
  usdc: ctx.usdc,
  chainId: ctx.config.chain.chainId,
  feeCap: ctx.feeCap,
  receiptTimeoutMs: ctx.receiptTimeoutMs,
})

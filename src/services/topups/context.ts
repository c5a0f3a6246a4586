// What every top-up operation works with, built once per service: the clients, the settings, the
// process's relayer accounts and their lock, and the agents' spend windows (for the caps).
import { parseGwei, type Hex } from 'viem'
import type { Relayer } from '../../chain/relayer.js'
import type { CoreDeps } from '../../core-deps.js'
import { createSpendWindows, type SpendWindows } from '../agent-payments/spend-windows.js'
import { senderContext, type SenderContext, type SenderOptions } from '../wallets/authorization-sender.js'

/**
 * Defaults: 5 attempts before a top-up is `failed`; retries after 30 s doubling up to 15 min; a
 * 3 min lease; 60 s for a receipt; an authorization lives 1 day (an expired one is re-signed); a
 * 100 gwei fee cap; the deployment's relayers.
 */
export interface TopupOptions extends SenderOptions {
  maxFeePerGasCap?: bigint
  relayerKeys?: readonly Hex[]
}

export interface TopupContext extends SenderContext {
  windows: SpendWindows
}

/** A failure that counts as an attempt (and is retried with backoff). */
export class AttemptFailed extends Error {}

/** The context of one top-ups service, with the options' defaults filled in. */
export function topupContext(deps: CoreDeps, opts: TopupOptions): TopupContext {
  const sender = senderContext(deps, opts, {
    maxAttempts: 5,
    backoffMs: 30_000,
    maxBackoffMs: 15 * 60_000,
    leaseMs: 180_000,
    receiptTimeoutMs: 60_000,
    authorizationTtlS: 86_400,
    feeCap: opts.maxFeePerGasCap ?? parseGwei('100'),
    relayerKeys: opts.relayerKeys ?? deps.config.relayerKeys,
  })
  return { ...sender, windows: createSpendWindows(deps.redis, deps.key) }
}

/** Runs fn holding a free relayer's lock (the settlement lock, so nonces never collide); null when all are busy. */
export async function withRelayer<T>(ctx: TopupContext, fn: (r: Relayer) => Promise<T>): Promise<{ value: T } | null> {
  const { relayers, lock } = ctx
  const start = Math.floor(Math.random() * Math.max(1, relayers.length))
  for (let i = 0; i < relayers.length; i++) {
    const r = relayers[(start + i) % relayers.length]!
    const token = await lock.acquire(r.address)
    if (!token) continue
    try {
      return { value: await fn(r) }
    } finally {
      await lock.release(r.address, token)
    }
  }
  return null
}

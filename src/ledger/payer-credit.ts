import { GUARD_LUA } from './payer-credit-scripts.js'
import { createGuard, type GuardArgs, type GuardOutcome } from './payer-credit-guard.js'
import {
  creditKeys,
  type CreditContext,
  type CreditDeps,
  type CreditKeys,
  type RedisWithGuard,
} from './payer-credit-keys.js'
import * as ops from './payer-credit-ops.js'

/**
 * Optimistic payer credit, kept in Redis so the hot path needs one round trip:
 *   balance  — the payer's on-chain balance of the asset, cached (never read per request)
 *   exposure — the sum of the payer's accepted but not yet settled payments
 *   blocked  — set after a settlement failed for lack of funds or a cancelled authorization
 * A payment is accepted when the nonce is new and balance - exposure >= value. A blocked payer's
 * payment is reserved the same way but answered 'blocked': it gets no unsettled credit, so the
 * proxy settles it before serving (and a success lifts the block). Postgres stays the truth:
 * exposure is recomputed from it whenever the cache is cold (e.g. after a Redis flush).
 */

export type { GuardResult } from './payer-credit-guard.js'

/** Values above this cannot be tracked exactly in Redis; no USDC payer holds that much anyway. */
export const MAX_TRACKED_VALUE = 2n ** 53n - 1n

type Value = { payer: string; asset: string; value: bigint }
type ReadBalances = (payers: string[]) => Promise<bigint[]>

export interface PayerCredit {
  keys: CreditKeys
  /**
   * The hot-path check and reservation, in one round trip. On 'ok' (and 'blocked') the nonce is
   * taken and the value added to the payer's exposure. `stale` says the cached balance was read
   * more than 30 s ago: on 'ok' the caller refreshes it in the background; on 'insufficient' the
   * payer may have been funded since, so the caller reads it once and asks again.
   */
  reserve(p: GuardArgs): Promise<GuardOutcome>
  /** gives back a reservation whose payment was not recorded or was voided */
  release(p: Value): Promise<void>
  /**
   * A payment settled: its value leaves the exposure and the cached balance at once (the funds
   * moved), and the balance is marked for a refresh. The settler re-reads balances afterwards;
   * should that read fail, the cache is still right.
   */
  settled(p: Value): Promise<void>
  /** frees a nonce whose payment was never recorded, so the same header may be retried */
  forgetNonce(payer: string, nonce: string): Promise<void>
  /** stores an on-chain balance as read (tests and operators; the platform reads through `readBalances`) */
  setBalance(asset: string, payer: string, balance: bigint): Promise<void>
  /**
   * Reads the payers' on-chain balances with `read` and caches each one, unless a payment of that
   * payer settled while the read was under way (its balance may predate the transfer, which the
   * cache already took off). Returns the balances read, in order.
   */
  readBalances(asset: string, payers: string[], read: ReadBalances): Promise<bigint[]>
  /**
   * Recomputes exposure from Postgres (cold cache, after a flush, or periodically). Payments
   * reserved while Postgres is read may not have committed yet: they are counted in Redis during
   * the rebuild and added, so the rebuild never drops a reservation. A payment released during
   * the rebuild may stay counted until the next one (the payer is briefly under-credited, never
   * over-credited).
   */
  rebuildExposure(asset: string, payer: string, opts?: { ifMissing?: boolean }): Promise<bigint>
  /**
   * Cold cache (first sight of a payer, or after a Redis flush): read the balance once, rebuild
   * exposure and the block flag from Postgres. Later refreshes are background work.
   */
  warm(asset: string, payer: string, read: ReadBalances): Promise<void>
  isBlocked(payer: string): Promise<boolean>
  /** refuse the payer optimistic credit until cleared (durable in Postgres, mirrored in Redis) */
  block(payer: string, reason: string, paymentId?: string): Promise<void>
  unblock(payer: string): Promise<void>
}

export function createPayerCredit(deps: CreditDeps): PayerCredit {
  const redis = deps.redis as RedisWithGuard
  // the number of keys varies with the batch, so it is passed per call
  if (!redis.tollgateGuardBatch) redis.defineCommand('tollgateGuardBatch', { lua: GUARD_LUA })
  const k = creditKeys(deps.key)
  const ctx: CreditContext = { redis, db: deps.db, k }
  const guard = createGuard(redis, k)
  return {
    keys: k,
    async reserve(p) {
      if (p.value > MAX_TRACKED_VALUE) return { result: 'insufficient', stale: false }
      const outcome = await guard.add(p)
      if (outcome instanceof Error) throw outcome
      return outcome
    },
    release: (p) => ops.release(ctx, p),
    settled: (p) => ops.settled(ctx, p),
    async forgetNonce(payer, nonce) {
      await redis.del(k.nonce(payer, nonce))
    },
    setBalance: (asset, payer, balance) => ops.setBalance(ctx, asset, payer, balance),
    readBalances: (asset, payers, read) => ops.readBalances(ctx, asset, payers, read),
    rebuildExposure: (asset, payer, opts) => ops.rebuildExposure(ctx, asset, payer, opts),
    warm: (asset, payer, read) => ops.warm(ctx, asset, payer, read),
    isBlocked: async (payer) => (await redis.exists(k.blocked(payer))) === 1,
    block: (payer, reason, paymentId) => ops.block(ctx, payer, reason, paymentId),
    unblock: (payer) => ops.unblock(ctx, payer),
  }
}

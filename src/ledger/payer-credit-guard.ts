import { groupBySlot } from '../redis-client.js'
import { groupCommit } from '../db/group-commit.js'
import type { CreditKeys, RedisWithGuard } from './payer-credit-keys.js'

/*
 * The hot-path guard of payer credit (payer-credit.ts): requests verified in the same turn share
 * one GUARD_LUA call (per cluster slot), one round trip and one script run for the batch.
 */

/** 'blocked': reserved like 'ok', but the payer is blocked, so the payment must be settled before it is served */
export type GuardResult = 'ok' | 'nonce_used' | 'blocked' | 'insufficient' | 'unknown_balance'

export type GuardArgs = {
  payer: string
  asset: string
  nonce: string
  value: bigint
  validBefore: number
  nowMs: number
}
export type GuardOutcome = { result: GuardResult; stale: boolean }

const CODES: GuardResult[] = ['ok', 'nonce_used', 'blocked', 'insufficient', 'unknown_balance']

/**
 * The batching guard (the next batch forms while one is in flight). On a cluster one slot's call
 * may fail (its master is failing over) while the others succeed: each payment gets its own call's
 * outcome, an Error for the failed ones.
 */
export function createGuard(redis: RedisWithGuard, k: CreditKeys) {
  return groupCommit<GuardArgs, GuardOutcome | Error>({
    maxItems: 128,
    maxInFlight: 2,
    flush: (batch) => guardBatch(redis, k, batch),
  })
}

/**
 * One script call per cluster slot (one for the whole batch on a single Redis), sent together:
 * a payer's payments stay in one call, in arrival order.
 */
async function guardBatch(
  redis: RedisWithGuard,
  k: CreditKeys,
  batch: GuardArgs[],
): Promise<Array<GuardOutcome | Error>> {
  const out = new Map<GuardArgs, GuardOutcome | Error>()
  const groups = groupBySlot(redis, batch, (p) => k.exposure(p.asset, p.payer))
  const calls = await Promise.allSettled(
    groups.map(async (group) => {
      const keys: string[] = []
      const argv: string[] = []
      for (const p of group) {
        keys.push(
          k.nonce(p.payer, p.nonce),
          k.balance(p.asset, p.payer),
          k.exposure(p.asset, p.payer),
          k.blocked(p.payer),
          k.fresh(p.asset, p.payer),
          k.rebuild(p.asset, p.payer),
        )
        argv.push(p.value.toString(), String(Math.max(1000, p.validBefore * 1000 - p.nowMs + 60_000)))
      }
      const flat = await redis.tollgateGuardBatch!(keys.length, ...keys, ...argv)
      group.forEach((p, i) =>
        out.set(p, { result: CODES[flat[i * 2]!] ?? 'insufficient', stale: flat[i * 2 + 1] === 1 }),
      )
    }),
  )
  calls.forEach((c, i) => {
    if (c.status === 'rejected') {
      const err = c.reason instanceof Error ? c.reason : new Error(String(c.reason))
      for (const p of groups[i]!) out.set(p, err)
    }
  })
  return batch.map((p) => out.get(p)!)
}

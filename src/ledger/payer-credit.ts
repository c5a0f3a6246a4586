import { randomUUID } from 'node:crypto'
import { groupBySlot, redisTag, type RedisClient } from '../redis-client.js'
import { sql, type Kysely } from 'kysely'
import type { Database } from '../db/database.js'
import { groupCommit } from '../db/group-commit.js'

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

/** 'blocked': reserved like 'ok', but the payer is blocked, so the payment must be settled before it is served */
export type GuardResult = 'ok' | 'nonce_used' | 'blocked' | 'insufficient' | 'unknown_balance'

// The guard for a batch of payments, checked in arrival order in one script (so two payments of one
// payer in the same batch see each other's exposure, exactly as two separate calls would).
// Per payment, KEYS: nonce, balance, exposure, blocked, fresh, rebuild (6 each); ARGV: value,
// nonceTtlMs (2 each). Returns a flat list of [code, stale] pairs, code 0 ok, 1 nonce used, 2 blocked
// (reserved, settle before serving), 3 insufficient, 4 unknown balance. While a rebuild of the
// payer's exposure is under way, each reservation is also counted in the rebuild's hash.
const GUARD_LUA = `
local out = {}
for i = 0, #ARGV / 2 - 1 do
  local k = i * 6
  local value = ARGV[i * 2 + 1]
  local code, stale = 0, 0
  local bal = redis.call('GET', KEYS[k + 2])
  if not bal then code = 4
  elseif tonumber(bal) - tonumber(redis.call('GET', KEYS[k + 3]) or '0') < tonumber(value) then
    code = 3
    if redis.call('EXISTS', KEYS[k + 5]) == 0 then stale = 1 end
  elseif not redis.call('SET', KEYS[k + 1], '1', 'NX', 'PX', ARGV[i * 2 + 2]) then code = 1
  else
    redis.call('INCRBY', KEYS[k + 3], value)
    if redis.call('EXISTS', KEYS[k + 6]) == 1 then redis.call('HINCRBY', KEYS[k + 6], 'd', value) end
    if redis.call('EXISTS', KEYS[k + 5]) == 0 then stale = 1 end
    if redis.call('EXISTS', KEYS[k + 4]) == 1 then code = 2 end
  end
  out[i * 2 + 1] = code
  out[i * 2 + 2] = stale
end
return out
`
// `value` leaves the payer's exposure. KEYS: exposure, and for a settled payment (the funds moved
// on chain) also balance, fresh and stamp: then it leaves the cached balance in the same step, so no
// guard in between sees the exposure gone and the old balance still there, and the stamp moves on,
// so a balance read before the transfer cannot be written over this one (see STAMPED_SET_LUA).
// Missing keys stay missing (rebuilt from Postgres / the chain).
const RELEASE_LUA = `
if redis.call('EXISTS', KEYS[1]) == 1 then
  local left = redis.call('DECRBY', KEYS[1], ARGV[1])
  if left < 0 then redis.call('SET', KEYS[1], '0') end
end
if #KEYS == 4 then
  redis.call('INCR', KEYS[4])
  redis.call('EXPIRE', KEYS[4], ARGV[2])
  local bal = redis.call('GET', KEYS[2])
  if bal then
    local rest = tonumber(bal) - tonumber(ARGV[1])
    if rest < 0 then rest = 0 end
    redis.call('SET', KEYS[2], string.format('%d', rest), 'KEEPTTL')
    redis.call('DEL', KEYS[3])
  end
end
return 1
`
// A balance read from the chain is stored only if no payment of the payer settled since the read
// began (the stamp is unchanged): otherwise it predates a transfer the cache already accounts for.
// KEYS: balance, fresh, stamp; ARGV: balance, stamp seen before the read ('' for none), balance ttl s,
// fresh ttl s. 1 when stored.
const STAMPED_SET_LUA = `
if (redis.call('GET', KEYS[3]) or '') ~= ARGV[2] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[3])
redis.call('SET', KEYS[2], '1', 'EX', ARGV[4])
return 1
`
// Starts counting the payer's reservations for a rebuild of its exposure, unless one is under way
// (or, with ARGV[3] = '1', unless the exposure exists: a warm-up after another caller's).
// KEYS: rebuild, exposure; ARGV: owner token, ttl ms, if missing. 1 when this caller owns the
// rebuild, 2 when the exposure was there already.
const REBUILD_BEGIN_LUA = `
if ARGV[3] == '1' and redis.call('EXISTS', KEYS[2]) == 1 then return 2 end
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'o', ARGV[1], 'd', '0')
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
`
// Ends a rebuild: exposure = the open payments Postgres showed + what was reserved since the rebuild
// began (those rows may not have been committed when Postgres was read). A caller that does not own
// the rebuild (another one is under way, or it outlived its ttl) writes only a missing exposure.
// KEYS: exposure, rebuild; ARGV: total from Postgres, owner token. Returns the exposure now stored.
const REBUILD_END_LUA = `
if redis.call('HGET', KEYS[2], 'o') == ARGV[2] then
  local total = tonumber(ARGV[1]) + tonumber(redis.call('HGET', KEYS[2], 'd'))
  redis.call('SET', KEYS[1], string.format('%d', total))
  redis.call('DEL', KEYS[2])
else
  redis.call('SET', KEYS[1], ARGV[1], 'NX')
end
return redis.call('GET', KEYS[1])
`
const CODES: GuardResult[] = ['ok', 'nonce_used', 'blocked', 'insufficient', 'unknown_balance']

/** Values above this cannot be tracked exactly in Redis; no USDC payer holds that much anyway. */
export const MAX_TRACKED_VALUE = 2n ** 53n - 1n
const BALANCE_TTL_S = 3600
const FRESH_TTL_S = 30
/** How long a rebuild may take before its count of reservations is dropped (its Postgres read timed out, or its process died). */
const REBUILD_TTL_MS = 30_000

type RedisWithGuard = RedisClient & {
  tollgateGuardBatch?: (numberOfKeys: number, ...args: (string | number)[]) => Promise<number[]>
}

type GuardArgs = { payer: string; asset: string; nonce: string; value: bigint; validBefore: number; nowMs: number }
type GuardOutcome = { result: GuardResult; stale: boolean }

export function createPayerCredit(deps: { redis: RedisClient; db: Kysely<Database>; key(...p: string[]): string }) {
  const redis = deps.redis as RedisWithGuard
  // the number of keys varies with the batch, so it is passed per call
  if (!redis.tollgateGuardBatch) redis.defineCommand('tollgateGuardBatch', { lua: GUARD_LUA })
  // Every key of a payer carries the payer as its hash tag: on a Redis Cluster they share one slot,
  // so each script below touches one slot (docs/architecture.md "Redis Cluster").
  const k = {
    nonce: (payer: string, nonce: string) => deps.key('nonce', redisTag(payer), nonce),
    balance: (asset: string, payer: string) => deps.key('bal', redisTag(payer), asset),
    fresh: (asset: string, payer: string) => deps.key('balfresh', redisTag(payer), asset),
    exposure: (asset: string, payer: string) => deps.key('exp', redisTag(payer), asset),
    blocked: (payer: string) => deps.key('blocked', redisTag(payer)),
    rebuild: (asset: string, payer: string) => deps.key('exprebuild', redisTag(payer), asset),
    stamp: (asset: string, payer: string) => deps.key('balstamp', redisTag(payer), asset),
  }

  // Requests verified in the same turn share one script call: one round trip and one script run
  // for the batch instead of one per payment (the next batch forms while one is in flight).
  // On a cluster one slot's call may fail (its master is failing over) while the others succeed:
  // each payment gets its own call's outcome, an Error for the failed ones.
  const guard = groupCommit<GuardArgs, GuardOutcome | Error>({
    maxItems: 128,
    maxInFlight: 2,
    async flush(batch) {
      // one script call per cluster slot (one for the whole batch on a single Redis), sent together:
      // a payer's payments stay in one call, in arrival order
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
    },
  })

  return {
    keys: k,
    /**
     * The hot-path check and reservation, in one round trip. On 'ok' (and 'blocked') the nonce is
     * taken and the value added to the payer's exposure. `stale` says the cached balance was read
     * more than 30 s ago: on 'ok' the caller refreshes it in the background; on 'insufficient' the
     * payer may have been funded since, so the caller reads it once and asks again.
     */
    async reserve(p: GuardArgs): Promise<GuardOutcome> {
      if (p.value > MAX_TRACKED_VALUE) return { result: 'insufficient', stale: false }
      const outcome = await guard.add(p)
      if (outcome instanceof Error) throw outcome
      return outcome
    },
    /** gives back a reservation whose payment was not recorded or was voided */
    async release(p: { payer: string; asset: string; value: bigint }): Promise<void> {
      // A missing key (cold cache, flushed Redis) stays missing: it is rebuilt from Postgres, and a
      // negative exposure would overstate the payer's credit.
      await redis.eval(RELEASE_LUA, 1, k.exposure(p.asset, p.payer), p.value.toString())
    },
    /**
     * A payment settled: its value leaves the exposure and the cached balance at once (the funds
     * moved), and the balance is marked for a refresh. The settler re-reads balances afterwards;
     * should that read fail, the cache is still right.
     */
    async settled(p: { payer: string; asset: string; value: bigint }): Promise<void> {
      const keys = [
        k.exposure(p.asset, p.payer),
        k.balance(p.asset, p.payer),
        k.fresh(p.asset, p.payer),
        k.stamp(p.asset, p.payer),
      ]
      await redis.eval(RELEASE_LUA, 4, ...keys, p.value.toString(), String(BALANCE_TTL_S))
    },
    /** frees a nonce whose payment was never recorded, so the same header may be retried */
    async forgetNonce(payer: string, nonce: string): Promise<void> {
      await redis.del(k.nonce(payer, nonce))
    },
    /** stores an on-chain balance as read (tests and operators; the platform reads through `readBalances`) */
    async setBalance(asset: string, payer: string, balance: bigint): Promise<void> {
      await redis
        .multi()
        .set(k.balance(asset, payer), balance.toString(), 'EX', BALANCE_TTL_S)
        .set(k.fresh(asset, payer), '1', 'EX', FRESH_TTL_S)
        .exec()
    },
    /**
     * Reads the payers' on-chain balances with `read` and caches each one, unless a payment of that
     * payer settled while the read was under way (its balance may predate the transfer, which the
     * cache already took off). Returns the balances read, in order.
     */
    async readBalances(
      asset: string,
      payers: string[],
      read: (payers: string[]) => Promise<bigint[]>,
    ): Promise<bigint[]> {
      if (payers.length === 0) return []
      // one GET per payer (each payer's keys sit in its own slot on a cluster; auto-pipelined)
      const stamps = await Promise.all(payers.map((p) => redis.get(k.stamp(asset, p))))
      const balances = await read(payers)
      await Promise.all(
        payers.map((p, i) =>
          redis.eval(
            STAMPED_SET_LUA,
            3,
            k.balance(asset, p),
            k.fresh(asset, p),
            k.stamp(asset, p),
            balances[i]!.toString(),
            stamps[i] ?? '',
            String(BALANCE_TTL_S),
            String(FRESH_TTL_S),
          ),
        ),
      )
      return balances
    },
    /**
     * Recomputes exposure from Postgres (cold cache, after a flush, or periodically). Payments
     * reserved while Postgres is read may not have committed yet: they are counted in Redis during
     * the rebuild and added, so the rebuild never drops a reservation. A payment released during
     * the rebuild may stay counted until the next one (the payer is briefly under-credited, never
     * over-credited).
     */
    async rebuildExposure(asset: string, payer: string, opts: { ifMissing?: boolean } = {}): Promise<bigint> {
      const token = randomUUID()
      const begun = await redis.eval(
        REBUILD_BEGIN_LUA,
        2,
        k.rebuild(asset, payer),
        k.exposure(asset, payer),
        token,
        String(REBUILD_TTL_MS),
        opts.ifMissing ? '1' : '0',
      )
      if (begun === 2) return BigInt((await redis.get(k.exposure(asset, payer))) ?? '0')
      // pending USDC withdrawals from the wallet are reserved here too (src/services/withdrawals/)
      const r = await sql<{ total: string | null }>`
        select (coalesce((select sum(value) from payments where payer = ${payer} and asset = ${asset} and scheme = 'exact' and status in ('verified','served','settling')), 0)
          + coalesce((select sum(amount) from withdrawals where lower(from_address) = lower(${payer}) and status = 'pending' and asset = 'USDC'), 0))::text as total`.execute(
        deps.db,
      )
      const stored = (await redis.eval(
        REBUILD_END_LUA,
        2,
        k.exposure(asset, payer),
        k.rebuild(asset, payer),
        r.rows[0]?.total ?? '0',
        token,
      )) as string
      return BigInt(stored)
    },
    /**
     * Cold cache (first sight of a payer, or after a Redis flush): read the balance once, rebuild
     * exposure and the block flag from Postgres. Later refreshes are background work.
     */
    async warm(asset: string, payer: string, read: (payers: string[]) => Promise<bigint[]>): Promise<void> {
      const blocked = await deps.db
        .selectFrom('payer_blocks')
        .select('reason')
        .where('payer', '=', payer)
        .executeTakeFirst()
      if (blocked) await redis.set(k.blocked(payer), blocked.reason)
      else await redis.del(k.blocked(payer))
      // Only a missing exposure is rebuilt: callers that met the cold cache together each warm it,
      // and a rebuild that began after another's warm-up would drop the reservations made since
      // whose rows were not committed yet when it read Postgres (the payer over-credited).
      await this.rebuildExposure(asset, payer, { ifMissing: true })
      // a payment of this payer settling during the read leaves the balance unwritten: read again
      for (let i = 0; i < 3; i++) {
        await this.readBalances(asset, [payer], read)
        if ((await redis.exists(k.balance(asset, payer))) === 1) return
      }
    },
    async isBlocked(payer: string): Promise<boolean> {
      return (await redis.exists(k.blocked(payer))) === 1
    },
    /** refuse the payer optimistic credit until cleared (durable in Postgres, mirrored in Redis) */
    async block(payer: string, reason: string, paymentId?: string): Promise<void> {
      await deps.db
        .insertInto('payer_blocks')
        .values({ payer, reason, payment_id: paymentId ?? null })
        .onConflict((oc) => oc.column('payer').doNothing())
        .execute()
      await redis.set(k.blocked(payer), reason)
    },
    async unblock(payer: string): Promise<void> {
      await deps.db.deleteFrom('payer_blocks').where('payer', '=', payer).execute()
      await redis.del(k.blocked(payer))
    },
  }
}

export type PayerCredit = ReturnType<typeof createPayerCredit>

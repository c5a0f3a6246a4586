/**
 * Spend-cap counters in Redis, one per agent and UTC window (day, month), checked and
 * incremented by one Lua script so that concurrent payments on any number of processes see one
 * total. Postgres stays the source of truth: a missing counter (new window, flushed Redis) is
 * rebuilt from the agent's reserved + accepted payments of that window with SET NX.
 *
 * The same call checks the wallet balance against its unsettled authorizations: a per-wallet
 * total and a sorted set (member `nonce:amount`, score valid_before) of what every process has
 * signed and the chain may still move. Entries leave when refused or past valid_before (lazily,
 * in the script) and a little after settlement (releaseUnsettled).
 */
import { sql, type Kysely } from 'kysely'
import type { Database } from '../../db/database.js'
import { redisTag, type RedisClient } from '../../redis-client.js'

/** Caps and amounts above this are treated as unlimited / refused: Lua numbers are doubles. */
export const MAX_COUNTED = 2n ** 53n - 1n

// KEYS: day counter, month counter, unsettled total, unsettled zset (member `nonce:amount`, score
// valid_before). ARGV: amount, daily cap, monthly cap (-1 = none), day/month init totals ('' =
// none), day/month TTLs, peek ('1'), on-chain balance ('' = no balance check), now (unix s),
// member, valid_before, unsettled TTL.
const RESERVE = `
local amt = tonumber(ARGV[1])
local caps = { tonumber(ARGV[2]), tonumber(ARGV[3]) }
local used = {}
for i = 1, 2 do
  local v = redis.call('GET', KEYS[i])
  if not v then
    if ARGV[3 + i] == '' then return { -1 } end
    redis.call('SET', KEYS[i], ARGV[3 + i], 'EX', ARGV[5 + i], 'NX')
    v = redis.call('GET', KEYS[i])
  end
  used[i] = tonumber(v)
end
local unsettled = 0
if ARGV[9] ~= '' then
  local u = redis.call('GET', KEYS[3])
  if not u then return { -2 } end
  -- authorizations past valid_before can no longer move funds: drop a few per call
  local old = redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', ARGV[10], 'LIMIT', 0, 64)
  for _, m in ipairs(old) do
    redis.call('ZREM', KEYS[4], m)
    u = redis.call('DECRBY', KEYS[3], string.sub(m, 68))
  end
  unsettled = tonumber(u)
end
if ARGV[8] == '1' then return { 2, 0, used[1], used[2], unsettled } end
if ARGV[9] ~= '' and unsettled + amt > tonumber(ARGV[9]) then return { 3, 0, used[1], used[2], unsettled } end
for i = 1, 2 do
  if caps[i] >= 0 and used[i] + amt > caps[i] then return { 0, i, used[1], used[2], unsettled } end
end
redis.call('INCRBY', KEYS[1], ARGV[1])
redis.call('INCRBY', KEYS[2], ARGV[1])
if ARGV[9] ~= '' then
  redis.call('ZADD', KEYS[4], ARGV[12], ARGV[11])
  unsettled = redis.call('INCRBY', KEYS[3], ARGV[1])
  redis.call('EXPIRE', KEYS[3], ARGV[13])
  redis.call('EXPIRE', KEYS[4], ARGV[13])
end
return { 1, 0, used[1] + amt, used[2] + amt, unsettled }
`

const ADJUST = `
for i = 1, 2 do
  if redis.call('EXISTS', KEYS[i]) == 1 then redis.call('INCRBY', KEYS[i], ARGV[1]) end
end
return 1
`

// KEYS: unsettled total, zset. ARGV: member, then '' (release now) or a unix time to release at
// (a settled payment stays counted until every process has re-read the on-chain balance).
const RELEASE = `
if ARGV[2] == '' then
  if redis.call('ZREM', KEYS[2], ARGV[1]) == 1 then redis.call('DECRBY', KEYS[1], string.sub(ARGV[1], 68)) end
else
  redis.call('ZADD', KEYS[2], 'XX', 'LT', ARGV[2], ARGV[1])
end
return 1
`

// KEYS: unsettled total, zset. ARGV: TTL, then member, valid_before pairs from Postgres.
const REBUILD = `
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('DEL', KEYS[2])
local total = 0
for i = 2, #ARGV, 2 do
  redis.call('ZADD', KEYS[2], ARGV[i + 1], ARGV[i])
  total = total + tonumber(string.sub(ARGV[i], 68))
end
redis.call('SET', KEYS[1], string.format('%.0f', total), 'EX', ARGV[1])
if #ARGV > 1 then redis.call('EXPIRE', KEYS[2], ARGV[1]) end
return 1
`

// An authorization that is not a payment (a withdrawal, src/services/withdrawals/): the wallet-balance
// half of RESERVE alone, no cap counters. KEYS: unsettled total, zset. ARGV: amount, on-chain
// balance, now (unix s), member, valid_before, TTL. Returns { 1 ok | 0 over balance | -2 rebuild, unsettled }.
const RESERVE_UNSETTLED = `
local u = redis.call('GET', KEYS[1])
if not u then return { -2, 0 } end
local old = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[3], 'LIMIT', 0, 64)
for _, m in ipairs(old) do
  redis.call('ZREM', KEYS[2], m)
  u = redis.call('DECRBY', KEYS[1], string.sub(m, 68))
end
if tonumber(u) + tonumber(ARGV[1]) > tonumber(ARGV[2]) then return { 0, tonumber(u) } end
redis.call('ZADD', KEYS[2], ARGV[5], ARGV[4])
u = redis.call('INCRBY', KEYS[1], ARGV[1])
redis.call('EXPIRE', KEYS[1], ARGV[6])
redis.call('EXPIRE', KEYS[2], ARGV[6])
return { 1, u }
`

export interface Windows {
  /** UTC YYYY-MM-DD */
  day: string
  /** UTC YYYY-MM */
  month: string
}

export function windowsAt(now: Date): Windows {
  const iso = now.toISOString()
  return { day: iso.slice(0, 10), month: iso.slice(0, 7) }
}

export type ReserveResult =
  | { kind: 'init' }
  | { kind: 'init-unsettled' }
  | { kind: 'ok'; day: bigint; month: bigint; unsettled: bigint }
  | { kind: 'over'; cap: 'daily' | 'monthly'; day: bigint; month: bigint; unsettled: bigint }
  | { kind: 'balance'; day: bigint; month: bigint; unsettled: bigint }
  | { kind: 'peek'; day: bigint; month: bigint; unsettled: bigint }

/**
 * What Postgres counts against an agent's caps in the windows `w`: its reserved and accepted
 * payments (the totals a missing Redis counter is rebuilt from).
 */
export async function spendWindowTotals(
  db: Kysely<Database>,
  agentId: string,
  w: Windows,
): Promise<{ day: bigint; month: bigint }> {
  const r = await db
    .selectFrom('agent_payments')
    .select([
      sql<string>`coalesce(sum(amount) filter (where day_window = ${w.day}), 0)`.as('day'),
      sql<string>`coalesce(sum(amount), 0)`.as('month'),
    ])
    .where('agent_id', '=', agentId)
    .where('month_window', '=', w.month)
    .where('status', 'in', ['reserved', 'accepted'])
    .executeTakeFirstOrThrow()
  return { day: BigInt(r.day), month: BigInt(r.month) }
}

/** A signed authorization counted against the wallet until it is settled, refused or expires. */
export interface Unsettled {
  /** lower-case payer address */
  payer: string
  nonce: string
  amount: bigint
  /** unix seconds */
  validBefore: bigint
}

/** How long the unsettled keys live after the last payment (authorizations expire well before). */
const UNSETTLED_TTL = String(7 * 86400)
const member = (u: Pick<Unsettled, 'nonce' | 'amount'>) => `${u.nonce.toLowerCase()}:${u.amount}`

type Cmd = (keys: string[], args: string[]) => Promise<unknown>

type Caps = { daily: bigint | null; monthly: bigint | null }

export interface ReserveOptions {
  init?: { day: bigint; month: bigint }
  peek?: boolean
  balance?: bigint
  /** the authorization to count as unsettled; its payer (the agent's wallet) tags the agent's keys */
  pay: Unsettled
  nowSeconds: number
}

/** RESERVE's ARGV for `reserve`. */
function reserveArgs(amount: bigint, caps: Caps, opts: ReserveOptions): string[] {
  const cap = (c: bigint | null) => (c === null || c > MAX_COUNTED ? '-1' : c.toString())
  const { init, pay } = opts
  const balance = opts.balance === undefined ? '' : (opts.balance > MAX_COUNTED ? MAX_COUNTED : opts.balance).toString()
  return [
    amount.toString(),
    cap(caps.daily),
    cap(caps.monthly),
    init ? init.day.toString() : '',
    init ? init.month.toString() : '',
    String(3 * 86400),
    String(40 * 86400),
    opts.peek ? '1' : '0',
    balance,
    String(opts.nowSeconds),
    pay ? member(pay) : '',
    pay ? pay.validBefore.toString() : '0',
    UNSETTLED_TTL,
  ]
}

/** RESERVE's answer as a `ReserveResult`. */
function reserveResult(r: number[]): ReserveResult {
  if (r[0] === -1) return { kind: 'init' }
  if (r[0] === -2) return { kind: 'init-unsettled' }
  const day = BigInt(r[2]!)
  const month = BigInt(r[3]!)
  const unsettled = BigInt(r[4]!)
  if (r[0] === 2) return { kind: 'peek', day, month, unsettled }
  if (r[0] === 3) return { kind: 'balance', day, month, unsettled }
  if (r[0] === 0) return { kind: 'over', cap: r[1] === 1 ? 'daily' : 'monthly', day, month, unsettled }
  return { kind: 'ok', day, month, unsettled }
}

export function createSpendWindows(redis: RedisClient, key: (...parts: string[]) => string) {
  const reserveCmd = script(redis, 'tollgateReserveSpend2', RESERVE, 4)
  const adjustCmd = script(redis, 'tollgateAdjustSpend', ADJUST, 2)
  const releaseCmd = script(redis, 'tollgateReleaseUnsettled', RELEASE, 2)
  const rebuildCmd = script(redis, 'tollgateRebuildUnsettled', REBUILD, 2)
  const reserveUnsettledCmd = script(redis, 'tollgateReserveUnsettled', RESERVE_UNSETTLED, 2)
  // An agent's cap counters and its wallet's unsettled set are used by one script, so they share
  // one hash tag, the wallet's address (an agent has one wallet): one cluster slot per agent.
  const keys = (agentId: string, wallet: string, w: Windows) => [
    key('agent-spend', redisTag(wallet.toLowerCase()), agentId, 'day', w.day),
    key('agent-spend', redisTag(wallet.toLowerCase()), agentId, 'month', w.month),
  ]
  const unsettledKeys = (payer: string) => [
    key('agent-unsettled', redisTag(payer.toLowerCase()), 'total'),
    key('agent-unsettled', redisTag(payer.toLowerCase()), 'auths'),
  ]
  return {
    /**
     * In one Lua call: adds `amount` to both windows unless a cap would be exceeded and, when
     * `balance` (the on-chain balance) is given, unless the wallet's unsettled authorizations on
     * every process plus `amount` exceed it; then counts `pay` as unsettled. `init` carries the
     * window totals from Postgres after an `init` answer (`rebuild` after `init-unsettled`).
     * `peek` reads without adding.
     */
    async reserve(
      agentId: string,
      w: Windows,
      amount: bigint,
      caps: Caps,
      opts: ReserveOptions,
    ): Promise<ReserveResult> {
      const payer = opts.pay.payer
      const r = (await reserveCmd(
        [...keys(agentId, payer, w), ...unsettledKeys(payer)],
        reserveArgs(amount, caps, opts),
      )) as number[]
      return reserveResult(r)
    },
    /**
     * Counts `u` as unsettled unless the wallet's unsettled authorizations plus `u.amount` exceed
     * `balance`, in the same keys (and so atomically with) `reserve`'s balance check, without
     * touching the cap counters: for a withdrawal, which is not spending. `init-unsettled`: rebuild first.
     */
    async reserveUnsettled(
      u: Unsettled,
      balance: bigint,
      nowSeconds: number,
    ): Promise<{ kind: 'ok' | 'balance' | 'init-unsettled'; unsettled: bigint }> {
      const b = (balance > MAX_COUNTED ? MAX_COUNTED : balance).toString()
      const r = (await reserveUnsettledCmd(unsettledKeys(u.payer), [
        u.amount.toString(),
        b,
        String(nowSeconds),
        member(u),
        u.validBefore.toString(),
        UNSETTLED_TTL,
      ])) as number[]
      return { kind: r[0] === 1 ? 'ok' : r[0] === 0 ? 'balance' : 'init-unsettled', unsettled: BigInt(r[1]!) }
    },
    /** Rebuilds a wallet's unsettled set from Postgres (after a Redis flush); a no-op when it exists. */
    async rebuildUnsettled(payer: string, open: Unsettled[]): Promise<void> {
      const args = [UNSETTLED_TTL]
      for (const u of open) args.push(member(u), u.validBefore.toString())
      await rebuildCmd(unsettledKeys(payer), args)
    },
    /**
     * Stops counting an authorization: at once when it can no longer move funds (refused,
     * expired, failed to record), or at `at` (unix s) when it settled, so that no process
     * subtracts it from a balance it read before the transfer.
     */
    async releaseUnsettled(u: Pick<Unsettled, 'payer' | 'nonce' | 'amount'>, at?: number): Promise<void> {
      await releaseCmd(unsettledKeys(u.payer), [member(u), at === undefined ? '' : String(at)])
    },
    /** Adds (or with a negative amount releases) an amount in windows that have a counter; `wallet` is the agent's address. */
    async adjust(agentId: string, wallet: string, w: Windows, amount: bigint): Promise<void> {
      await adjustCmd(keys(agentId, wallet, w), [amount.toString()])
    },
  }
}

export type SpendWindows = ReturnType<typeof createSpendWindows>

function script(redis: RedisClient, name: string, lua: string, numberOfKeys: number): Cmd {
  const r = redis as unknown as Record<string, Cmd>
  if (typeof r[name] !== 'function') redis.defineCommand(name, { numberOfKeys, lua })
  const fn = (redis as unknown as Record<string, (...a: string[]) => Promise<unknown>>)[name]!
  return (keys, args) => fn.call(redis, ...keys, ...args)
}

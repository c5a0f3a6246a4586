/**
 * Spend-cap counters in Redis, one per agent and UTC window (day, month), checked and
 * incremented by one Lua script so that concurrent payments on any number of processes see one
 * total. Postgres stays the source of truth: a missing counter (new window, flushed Redis) is
 * rebuilt from the agent's reserved + accepted payments of that window with SET NX.
 */
import type { Redis } from 'ioredis'

/** Caps and amounts above this are treated as unlimited / refused: Lua numbers are doubles. */
export const MAX_COUNTED = 2n ** 53n - 1n

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
if ARGV[8] == '1' then return { 2, 0, used[1], used[2] } end
for i = 1, 2 do
  if caps[i] >= 0 and used[i] + amt > caps[i] then return { 0, i, used[1], used[2] } end
end
redis.call('INCRBY', KEYS[1], ARGV[1])
redis.call('INCRBY', KEYS[2], ARGV[1])
return { 1, 0, used[1] + amt, used[2] + amt }
`

const ADJUST = `
for i = 1, 2 do
  if redis.call('EXISTS', KEYS[i]) == 1 then redis.call('INCRBY', KEYS[i], ARGV[1]) end
end
return 1
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
  | { kind: 'ok'; day: bigint; month: bigint }
  | { kind: 'over'; cap: 'daily' | 'monthly'; day: bigint; month: bigint }
  | { kind: 'peek'; day: bigint; month: bigint }

type Cmd = (keys: string[], args: string[]) => Promise<unknown>

export function spendWindows(redis: Redis, key: (...parts: string[]) => string) {
  const reserveCmd = script(redis, 'tollgateReserveSpend', RESERVE)
  const adjustCmd = script(redis, 'tollgateAdjustSpend', ADJUST)
  const keys = (agentId: string, w: Windows) => [key('agent-spend', agentId, 'day', w.day), key('agent-spend', agentId, 'month', w.month)]
  return {
    /**
     * Adds `amount` to both windows unless a cap would be exceeded. `init` carries the totals
     * from Postgres when the previous call answered `init`. `peek` reads without adding.
     */
    async reserve(agentId: string, w: Windows, amount: bigint, caps: { daily: bigint | null; monthly: bigint | null }, init?: { day: bigint; month: bigint }, peek = false): Promise<ReserveResult> {
      const cap = (c: bigint | null) => (c === null || c > MAX_COUNTED ? '-1' : c.toString())
      const r = (await reserveCmd(keys(agentId, w), [amount.toString(), cap(caps.daily), cap(caps.monthly), init ? init.day.toString() : '', init ? init.month.toString() : '', String(3 * 86400), String(40 * 86400), peek ? '1' : '0'])) as number[]
      if (r[0] === -1) return { kind: 'init' }
      const day = BigInt(r[2]!)
      const month = BigInt(r[3]!)
      if (r[0] === 2) return { kind: 'peek', day, month }
      if (r[0] === 0) return { kind: 'over', cap: r[1] === 1 ? 'daily' : 'monthly', day, month }
      return { kind: 'ok', day, month }
    },
    /** Adds (or with a negative amount releases) an amount in windows that have a counter. */
    async adjust(agentId: string, w: Windows, amount: bigint): Promise<void> {
      await adjustCmd(keys(agentId, w), [amount.toString()])
    },
  }
}

function script(redis: Redis, name: string, lua: string): Cmd {
  const r = redis as unknown as Record<string, Cmd>
  if (typeof r[name] !== 'function') redis.defineCommand(name, { numberOfKeys: 2, lua })
  const fn = (redis as unknown as Record<string, (...a: string[]) => Promise<unknown>>)[name]!
  return (keys, args) => fn.call(redis, ...keys, ...args)
}

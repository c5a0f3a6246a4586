/**
 * The hot-path state of `batch-settlement` channels in Redis: one hash per channel, checked and
 * locked in one script run with the call's reservation (one round trip per call).
 *
 * Hash `bsch:<channelId>`: `c` chargedCumulativeAmount, `m` signedMaxClaimable and `s` its
 * signature (the last voucher the server kept), `b` balance, `t` totalClaimed, `w`
 * withdrawRequestedAt (unix s, 0 none; also written by the claim worker, and while it is set a voucher
 * or deposit is refused), `n` refundNonce, and while a call is served `lk` (its
 * token) and `le` (when the lock lapses, ms). Decimal strings compared by length then bytes: exact
 * at any size.
 *
 * Postgres (`batch_channels`) is the truth: a hash is a copy, loaded from it (and the chain) when
 * absent, and expires LOAD_TTL_MS after its load so the mirrored chain fields are read again. A
 * call's charge is committed to Postgres first (the ledger's group commit, compare-and-set on
 * `charged`), then here. A lost or stale hash costs a reload; a double charge is impossible
 * because the Postgres update only moves from the `charged` the call reserved against.
 */
import type { RedisClient } from '../../redis-client.js'
import type { PayloadType } from './payload.js'

const LOAD_TTL_MS = 300_000

// KEYS: hash. ARGV: now ms, lock ttl ms, token, type, maxClaimable, expected charged, maxClaimable
// less the deposit ('0' when the deposit covers it), deposit amount.
// Returns {code, c, m, s, b, t, w, n}: 0 locked (reserved), 1 not loaded, 2 busy, 3 cumulative
// mismatch, 4 no channel, 5 exceeds balance, 6 below claimed, 7 a timed withdrawal pending (a voucher
// or deposit refused; a refund goes on, it shrinks or cancels the withdrawal on chain).
const RESERVE_LUA = `
local function gt(a, b) if #a ~= #b then return #a > #b end return a > b end
local k = KEYS[1]
if redis.call('EXISTS', k) == 0 then return {1} end
local f = redis.call('HMGET', k, 'c', 'm', 's', 'b', 't', 'w', 'n', 'lk', 'le')
local st = {f[1] or '0', f[2] or '0', f[3] or '', f[4] or '0', f[5] or '0', f[6] or '0', f[7] or '0'}
local function out(code) return {code, st[1], st[2], st[3], st[4], st[5], st[6], st[7]} end
if f[8] and f[9] and tonumber(f[9]) > tonumber(ARGV[1]) then return out(2) end
if ARGV[4] ~= 'refund' and st[6] ~= '0' then return out(7) end
if ARGV[6] ~= st[1] then return out(3) end
if st[4] == '0' and ARGV[8] == '0' then return out(4) end
if gt(ARGV[7], st[4]) then return out(5) end
if ARGV[4] == 'voucher' then
  if not gt(ARGV[5], st[5]) then return out(6) end
elseif gt(st[5], ARGV[5]) then return out(6) end
redis.call('HSET', k, 'lk', ARGV[3], 'le', tonumber(ARGV[1]) + tonumber(ARGV[2]))
return out(0)
`

// KEYS: hash. ARGV: token, charged, signedMax, signature, balance ('' unchanged). 1 committed;
// 0 the lock was lost (the hash is dropped: the next call reloads it from Postgres).
const COMMIT_LUA = `
if redis.call('HGET', KEYS[1], 'lk') ~= ARGV[1] then redis.call('DEL', KEYS[1]) return 0 end
redis.call('HSET', KEYS[1], 'c', ARGV[2], 'm', ARGV[3], 's', ARGV[4])
if ARGV[5] ~= '' then redis.call('HSET', KEYS[1], 'b', ARGV[5]) end
redis.call('HDEL', KEYS[1], 'lk', 'le')
return 1
`

// KEYS: hash. ARGV: token, balance ('' unchanged).
const RELEASE_LUA = `
if redis.call('HGET', KEYS[1], 'lk') ~= ARGV[1] then return 0 end
if ARGV[2] ~= '' then redis.call('HSET', KEYS[1], 'b', ARGV[2]) end
redis.call('HDEL', KEYS[1], 'lk', 'le')
return 1
`

// KEYS: hash. ARGV: token, balance, totalClaimed, refundNonce, withdrawRequestedAt: a refund's
// mirrored chain fields, and the lock released. 0 the lock was lost (the hash is dropped).
const REFUNDED_LUA = `
if redis.call('HGET', KEYS[1], 'lk') ~= ARGV[1] then redis.call('DEL', KEYS[1]) return 0 end
redis.call('HSET', KEYS[1], 'b', ARGV[2], 't', ARGV[3], 'n', ARGV[4], 'w', ARGV[5])
redis.call('HDEL', KEYS[1], 'lk', 'le')
return 1
`

// KEYS: hash. ARGV: withdrawRequestedAt. The claim worker's mirror of a timed withdrawal started or
// ended; a hash absent stays absent (it is loaded from Postgres, which has it already).
const WITHDRAWAL_LUA = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'w', ARGV[1])
return 1
`

// KEYS: hash. ARGV: ttl ms, then field/value pairs. Loads only when absent (a concurrent load or a
// live lock is never overwritten).
const LOAD_LUA = `
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local fv = {}
for i = 2, #ARGV do fv[#fv + 1] = ARGV[i] end
redis.call('HSET', KEYS[1], unpack(fv))
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1
`

/** A channel's server state, as the spec's "Per-Channel State" names it. */
export interface ChannelSnapshot {
  charged: bigint
  signedMax: bigint
  signature: string
  balance: bigint
  totalClaimed: bigint
  withdrawRequestedAt: number
  refundNonce: bigint
}

export type ReserveOutcome =
  | { code: 'reserved'; state: ChannelSnapshot }
  | { code: 'not_loaded' }
  | { code: 'busy' }
  | {
      code: 'mismatch' | 'not_found' | 'exceeds_balance' | 'below_claimed' | 'withdrawing'
      state: ChannelSnapshot
    }

const CODES = [
  'reserved',
  'not_loaded',
  'busy',
  'mismatch',
  'not_found',
  'exceeds_balance',
  'below_claimed',
  'withdrawing',
] as const

type Cmd = (key: string, ...args: (string | number)[]) => Promise<unknown>
type RedisWithChannels = RedisClient & {
  tollgateBatchReserve?: Cmd
  tollgateBatchCommit?: Cmd
  tollgateBatchRelease?: Cmd
  tollgateBatchLoad?: Cmd
  tollgateBatchRefunded?: Cmd
  tollgateBatchWithdrawal?: Cmd
}

function snapshot(r: string[]): ChannelSnapshot {
  return {
    charged: BigInt(r[1]!),
    signedMax: BigInt(r[2]!),
    signature: r[3]!,
    balance: BigInt(r[4]!),
    totalClaimed: BigInt(r[5]!),
    withdrawRequestedAt: Number(r[6]),
    refundNonce: BigInt(r[7]!),
  }
}

function defineCommands(redis: RedisWithChannels): RedisWithChannels {
  if (!redis.tollgateBatchReserve) {
    redis.defineCommand('tollgateBatchReserve', { numberOfKeys: 1, lua: RESERVE_LUA })
    redis.defineCommand('tollgateBatchCommit', { numberOfKeys: 1, lua: COMMIT_LUA })
    redis.defineCommand('tollgateBatchRelease', { numberOfKeys: 1, lua: RELEASE_LUA })
    redis.defineCommand('tollgateBatchLoad', { numberOfKeys: 1, lua: LOAD_LUA })
  }
  if (!redis.tollgateBatchRefunded) redis.defineCommand('tollgateBatchRefunded', { numberOfKeys: 1, lua: REFUNDED_LUA })
  if (!redis.tollgateBatchWithdrawal)
    redis.defineCommand('tollgateBatchWithdrawal', { numberOfKeys: 1, lua: WITHDRAWAL_LUA })
  return redis
}

/** The channels' hashes in Redis, through the scripts above (defined on the client once). */
export class ChannelState {
  readonly #redis: RedisWithChannels
  readonly #deps: { redis: RedisClient; key(...p: string[]): string }

  constructor(deps: { redis: RedisClient; key(...p: string[]): string }) {
    this.#redis = defineCommands(deps.redis as RedisWithChannels)
    this.#deps = deps
  }

  #keyOf(channelId: string): string {
    return this.#deps.key('bsch', channelId)
  }

  /** Checks the voucher against the channel and locks it for the call (the Lua above). */
  async reserve(a: {
    channelId: string
    type: PayloadType
    maxClaimable: bigint
    amount: bigint
    deposit: bigint
    token: string
    nowMs: number
    lockMs: number
  }): Promise<ReserveOutcome> {
    const expected = a.type === 'refund' ? a.maxClaimable : a.maxClaimable - a.amount
    const overDeposit = a.maxClaimable > a.deposit ? a.maxClaimable - a.deposit : 0n
    const r = (await this.#redis.tollgateBatchReserve!(
      this.#keyOf(a.channelId),
      a.nowMs,
      a.lockMs,
      a.token,
      a.type,
      a.maxClaimable.toString(),
      // a negative expectation never equals a stored amount: a mismatch
      expected < 0n ? '-' : expected.toString(),
      overDeposit.toString(),
      a.deposit.toString(),
    )) as (string | number)[]
    const code = CODES[Number(r[0])]!
    if (code === 'not_loaded' || code === 'busy') return { code }
    return { code, state: snapshot(r.map(String)) }
  }

  /** The served call's new state; false when its lock was lost (the hash was dropped). */
  async commit(
    channelId: string,
    token: string,
    s: { charged: bigint; signedMax: bigint; signature: string; balance?: bigint },
  ): Promise<boolean> {
    const r = await this.#redis.tollgateBatchCommit!(
      this.#keyOf(channelId),
      token,
      s.charged.toString(),
      s.signedMax.toString(),
      s.signature,
      s.balance === undefined ? '' : s.balance.toString(),
    )
    return Number(r) === 1
  }

  /** Unlocks without moving the charge (a failed call); `balance` after a deposit that landed. */
  async release(channelId: string, token: string, balance?: bigint): Promise<void> {
    await this.#redis.tollgateBatchRelease!(
      this.#keyOf(channelId),
      token,
      balance === undefined ? '' : balance.toString(),
    )
  }

  /** A cooperative refund landed: the chain's fields after it, and the channel unlocked. */
  async refunded(
    channelId: string,
    token: string,
    s: Omit<ChannelSnapshot, 'charged' | 'signedMax' | 'signature'>,
  ): Promise<void> {
    const { balance: b, totalClaimed: t, refundNonce: n } = s
    await this.#redis.tollgateBatchRefunded!(
      this.#keyOf(channelId),
      token,
      `${b}`,
      `${t}`,
      `${n}`,
      s.withdrawRequestedAt,
    )
  }

  /**
   * The chain's `withdrawRequestedAt` (unix s, 0 none) on the channel's copy, when it has one: the
   * claim worker's mirror, so the proxy refuses vouchers from the run that sees a withdrawal start.
   */
  async withdrawal(channelId: string, requestedAt: number): Promise<void> {
    await this.#redis.tollgateBatchWithdrawal!(this.#keyOf(channelId), requestedAt)
  }

  /** Loads a channel's state when it is absent. */
  async load(channelId: string, s: ChannelSnapshot): Promise<void> {
    await this.#redis.tollgateBatchLoad!(
      this.#keyOf(channelId),
      LOAD_TTL_MS,
      'c',
      s.charged.toString(),
      'm',
      s.signedMax.toString(),
      's',
      s.signature,
      'b',
      s.balance.toString(),
      't',
      s.totalClaimed.toString(),
      'w',
      s.withdrawRequestedAt,
      'n',
      s.refundNonce.toString(),
    )
  }

  /** Drops a channel's copy (tests, and after an update made elsewhere). */
  async forget(channelId: string): Promise<void> {
    await this.#deps.redis.del(this.#keyOf(channelId))
  }
}

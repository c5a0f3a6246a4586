/**
 * The `deferred` scheme's hot-path reservation: the head of each voucher id, cached in Redis per
 * (escrow, buyer, seller, asset), checked and moved in one script run — one round trip per call.
 *
 * The script checks what coinbase/x402 `scheme_deferred_evm.md` asks of a voucher against its
 * id's head (nonce + 1, `valueAggregate` = previous + price, a later timestamp; a new id carries
 * exactly the price) and the buyer's escrow balance (cached in the process, passed in) against
 * every uncollected aggregate of the tuple, and makes the voucher the head. Two calls with the same
 * nonce: the script runs one at a time, so exactly one finds the head it continues.
 *
 * Postgres decides. The voucher is written durably with its payment row, in the ledger's group
 * commit (src/ledger/ledger-writer.ts), where the unique (voucher id, nonce) index refuses a
 * second voucher with a nonce already stored. Redis only holds what Postgres holds plus the
 * reservations of calls still running:
 *   - a tuple not in Redis (first call, a flush, an expiry) is loaded from Postgres before its
 *     first check; a load that raced a collection (the epoch moved) is read again;
 *   - a head behind Postgres, or one reserved long ago and never written (its process died), is
 *     reloaded when a voucher is refused against it;
 *   - a failed call gives its reservation back: the head it replaced is restored while this voucher
 *     is still the head (compare-and-set on the voucher's digest).
 *
 * Hash `dv:{<buyer>}:<escrow>:<seller>:<asset>` (the buyer as hash tag): field `_` = loaded, field `i:<voucher id>` =
 * `nonce:valueAggregate:timestamp:collected:reservedAtMs:owner:digest` (reservedAt 0 and owner `-`
 * for a head loaded from Postgres; owner: the reserving process, alive while its key `dvlive:<owner>`
 * is, refreshed every second). Key `dvepoch:…` moves with each collection and each invalidation.
 */
import { randomUUID } from 'node:crypto'
import { sql, type Kysely } from 'kysely'
import type { Address, Hex } from 'viem'
import type { Database } from '../../db/database.js'
import { groupCommit, type GroupCommit } from '../../db/group-commit.js'
import { groupBySlot, redisTag, type RedisClient } from '../../redis-client.js'
import type { ReasonCode } from '../../x402/reasons.js'
import type { DeferredVoucher } from './typed-data.js'
import { checkAggregation, headsOf, type VoucherTuple } from './voucher-store.js'

// Decimal strings compared as numbers (no leading zeros): exact at any size. Sums of aggregates use
// Lua numbers (exact below 2^53; the balance passed in is capped there, so a larger sum refuses).
// A batch of reservations in arrival order (two of one tuple in a batch see each other, exactly as
// two separate runs would). Per reservation, KEYS (2): hash, the payer's block flag
// (ledger/payer-credit.ts); ARGV (13): id field, nonce, valueAggregate, timestamp, price, available
// (the escrow balance less its thawing amount), now ms, ttl ms, expected previous nonce ('' for
// nonce 0), expected previous aggregate, digest, when `available` was read (ms). The hash's `_acct`
// (`available:readAtMs`, stored by the collector after each collection and by whoever reads the
// escrow after a thaw) replaces the given one when it was read later: the newest read wins, so a
// proxy's cached balance cannot outlive a collection or a thaw another process saw. Returns per
// reservation a pair: 0 and the previous entry ('' for a new id) when reserved; 1 not loaded; 2 and
// the head entry ('' for none) when the voucher does not continue its head; 3 and what would be
// owed when over what is available; 4 when the payer is blocked.
const RESERVE_LUA = `
local function gt(a, b) if #a ~= #b then return #a > #b end return a > b end
local function reserve(key, blocked, A)
  if redis.call('HEXISTS', key, '_') == 0 then return 1, '' end
  if redis.call('EXISTS', blocked) == 1 then return 4, '' end
  local head = redis.call('HGET', key, A[1])
  local collected = '0'
  if head then
    local n, agg, ts, col = string.match(head, '^(%d+):(%d+):(%d+):(%d+):')
    if n ~= A[9] or agg ~= A[10] or not gt(A[4], ts) then return 2, head end
    collected = col
  elseif A[3] ~= A[5] then
    return 2, ''
  end
  local available = tonumber(A[6])
  local acct = redis.call('HGET', key, '_acct')
  if acct then
    local av, at = string.match(acct, '^(%d+):(%d+)$')
    if av and tonumber(at) > tonumber(A[12]) then available = tonumber(av) end
  end
  local owed = tonumber(A[3]) - tonumber(collected)
  local all = redis.call('HGETALL', key)
  for i = 1, #all, 2 do
    if string.sub(all[i], 1, 2) == 'i:' and all[i] ~= A[1] then
      local agg, col = string.match(all[i + 1], '^%d+:(%d+):%d+:(%d+):')
      owed = owed + tonumber(agg) - tonumber(col)
    end
  end
  if owed > available then return 3, string.format('%.0f', owed) end
  redis.call('HSET', key, A[1], A[2] .. ':' .. A[3] .. ':' .. A[4] .. ':' .. collected .. ':' .. A[7] .. ':' .. A[13] .. ':' .. A[11])
  redis.call('PEXPIRE', key, A[8])
  return 0, head or ''
end
local out = {}
for i = 1, #KEYS / 2 do
  local A = {}
  for j = 1, 13 do A[j] = ARGV[(i - 1) * 13 + j] end
  local code, entry = reserve(KEYS[i * 2 - 1], KEYS[i * 2], A)
  out[i * 2 - 1] = code
  out[i * 2] = entry
end
return out
`
// What is available in the escrow account (balance less thawing) as read at a time, kept unless a
// later read is there already. KEYS: hash; ARGV: available, read at (ms), ttl ms. 1 when stored.
const ACCOUNT_LUA = `
local acct = redis.call('HGET', KEYS[1], '_acct')
if acct then
  local at = string.match(acct, ':(%d+)$')
  if at and tonumber(at) >= tonumber(ARGV[2]) then return 0 end
end
redis.call('HSET', KEYS[1], '_acct', ARGV[1] .. ':' .. ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
`
// Gives a reservation back while it is still the head. KEYS: hash; ARGV: id field, digest, previous
// entry ('' for a new id). 1 when given back.
const RELEASE_LUA = `
local head = redis.call('HGET', KEYS[1], ARGV[1])
if not head or string.sub(head, -#ARGV[2]) ~= ARGV[2] then return 0 end
if ARGV[3] == '' then redis.call('HDEL', KEYS[1], ARGV[1]) else redis.call('HSET', KEYS[1], ARGV[1], ARGV[3]) end
return 1
`
// Stores the heads read from Postgres, unless the epoch moved since the read began or another
// caller loaded first. KEYS: hash, epoch; ARGV: epoch seen ('' for none), ttl ms, then field/value
// pairs. 1 stored, 0 epoch moved, 2 already loaded.
const LOAD_LUA = `
if (redis.call('GET', KEYS[2]) or '') ~= ARGV[1] then return 0 end
if redis.call('HEXISTS', KEYS[1], '_') == 1 then return 2 end
redis.call('HSET', KEYS[1], '_', '1')
for i = 3, #ARGV, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
`
// What the escrow paid for a voucher id, as a collection read it: the head's `collected` follows
// (never down), and the epoch moves so that a load racing it reads Postgres again. KEYS: hash,
// epoch; ARGV: id field, collected.
const COLLECTED_LUA = `
redis.call('INCR', KEYS[2])
redis.call('PEXPIRE', KEYS[2], 86400000)
local head = redis.call('HGET', KEYS[1], ARGV[1])
if not head then return 0 end
local n, agg, ts, col, rest = string.match(head, '^(%d+):(%d+):(%d+):(%d+):(.*)$')
if #ARGV[2] > #col or (#ARGV[2] == #col and ARGV[2] > col) then
  redis.call('HSET', KEYS[1], ARGV[1], n .. ':' .. agg .. ':' .. ts .. ':' .. ARGV[2] .. ':' .. rest)
end
return 1
`
// Drops the tuple's heads (next call loads them from Postgres) and moves the epoch; the account
// read (`_acct`) is kept: it comes from the chain, not from Postgres. KEYS: hash, epoch.
const INVALIDATE_LUA = `
redis.call('INCR', KEYS[2])
redis.call('PEXPIRE', KEYS[2], 86400000)
local acct = redis.call('HGET', KEYS[1], '_acct')
redis.call('DEL', KEYS[1])
if acct then
  redis.call('HSET', KEYS[1], '_acct', acct)
  redis.call('PEXPIRE', KEYS[1], 86400000)
end
return 1
`

type RedisWithHeads = RedisClient & {
  tollgateDeferredReserve?: (numberOfKeys: number, ...args: (string | number)[]) => Promise<(number | string)[]>
  tollgateDeferredRelease?: (...args: (string | number)[]) => Promise<number>
  tollgateDeferredLoad?: (...args: (string | number)[]) => Promise<number>
  tollgateDeferredCollected?: (...args: (string | number)[]) => Promise<number>
  tollgateDeferredInvalidate?: (...args: (string | number)[]) => Promise<number>
  tollgateDeferredAccount?: (...args: (string | number)[]) => Promise<number>
}

/** Sums above this are not tracked exactly in Redis; a balance above it counts as this much. */
const MAX_TRACKED = 2n ** 53n - 1n
/** A tuple unused this long leaves Redis (loaded again from Postgres when next used). */
const TTL_MS = 24 * 3600_000
/**
 * A reservation older than this that Postgres never received is a dead process's: a voucher refused
 * against it reloads the tuple. Postgres' unique index still refuses a duplicate nonce whatever
 * Redis holds, so this bounds how long a buyer waits after a crash, not safety.
 */
export const STALE_RESERVATION_MS = 60_000
/**
 * A reserving process keeps its key `dvlive:<owner>` this long, refreshed every LIVENESS_EVERY_MS:
 * after a crash, a voucher refused against one of its unwritten reservations reloads the tuple from
 * Postgres once the key ran out, not after STALE_RESERVATION_MS. A live process whose key lapsed
 * (stalled that long) loses nothing: Postgres' unique index decides between the two vouchers.
 */
const LIVENESS_TTL_MS = 5_000
const LIVENESS_EVERY_MS = 1_000

/** What `reserve` took: enough to give it back. */
export interface HeldVoucher {
  tuple: VoucherTuple
  voucherId: Hex
  nonce: bigint
  digest: Hex
  /** the head it replaced (the Redis entry), '' for a new voucher id */
  previous: string
  /** undefined for a new voucher id */
  previousNonce: bigint | undefined
}

export type ReserveResult =
  { ok: true; held: HeldVoucher } | { ok: false; reason: ReasonCode; message: string; insufficient?: boolean }

interface Head {
  nonce: bigint
  valueAggregate: bigint
  timestamp: bigint
  collected: bigint
  reservedAt: number
  owner: string
}

function parseHead(entry: string): Head {
  const [n, agg, ts, col, at, owner] = entry.split(':')
  return {
    nonce: BigInt(n!),
    valueAggregate: BigInt(agg!),
    timestamp: BigInt(ts!),
    collected: BigInt(col!),
    reservedAt: Number(at),
    owner: owner ?? '-',
  }
}

type Args = (string | number)[]
/** One reservation's script input: its hash, the payer's block flag, and its 13 arguments. */
interface ReserveItem {
  key: string
  blocked: string
  args: Args
}

export interface ReserveInput {
  voucher: DeferredVoucher
  digest: Hex
  amount: bigint
  available: bigint
  availableAtMs: number
  nowMs: number
}

interface VoucherHeadsDeps {
  redis: RedisClient
  db: Kysely<Database>
  key(...p: string[]): string
}

export function createVoucherHeads(deps: VoucherHeadsDeps): VoucherHeads {
  return new VoucherHeads(deps)
}

/** The voucher heads of every tuple this process reserves on; `close()` stops its liveness heartbeat. */
export class VoucherHeads {
  readonly #redis: RedisWithHeads
  readonly #db: Kysely<Database>
  readonly #key: VoucherHeadsDeps['key']
  // this process, as the owner of its reservations: alive while its key is (refreshed from the first reservation)
  readonly #owner = randomUUID().replaceAll('-', '')
  #heartbeat: NodeJS.Timeout | undefined
  // Requests reserving in the same turn share one script run: one round trip for the batch (the
  // next batch forms while one is in flight), as the exact scheme's guard does.
  readonly #batch: GroupCommit<ReserveItem, [number, string] | Error>

  constructor(deps: VoucherHeadsDeps) {
    this.#redis = deps.redis as RedisWithHeads
    this.#db = deps.db
    this.#key = deps.key
    defineScripts(this.#redis)
    this.#batch = groupCommit<ReserveItem, [number, string] | Error>({
      maxItems: 128,
      maxInFlight: 2,
      flush: (items) => reserveBatch(this.#redis, items),
    })
  }

  /**
   * Checks the voucher against its head and what the escrow holds that the buyer cannot take
   * back (`available`, read at `availableAtMs`; a later read stored by another process wins),
   * and makes it the head: one round trip when the tuple is in Redis. Refuses a blocked payer.
   * Rejects when Redis or Postgres cannot be reached.
   */
  async reserve(input: ReserveInput): Promise<ReserveResult> {
    const { voucher: v, digest, amount, available: balance, availableAtMs, nowMs } = input
    await this.#startBeating()
    const t: VoucherTuple = { escrow: v.escrow, buyer: v.buyer, seller: v.seller, asset: v.asset }
    let reloaded = false
    for (let attempt = 0; attempt < 4; attempt++) {
      const [code, entry] = await this.#once(v, digest, amount, balance, availableAtMs, nowMs)
      if (code === 0) return { ok: true, held: heldVoucher(t, v, digest, entry) }
      if (code === 1) {
        await this.#load(t)
        continue
      }
      if (code === 3 || code === 4) return refusal(code, entry, balance)
      const head = entry ? parseHead(entry) : undefined
      if (!reloaded && (await this.#stale(t, v.id, head, nowMs))) {
        reloaded = true
        await this.#invalidate(t)
        continue
      }
      const bad = checkAggregation(head, v, amount) ?? {
        reason: 'invalid_deferred_evm_payload_voucher_stale' as const,
        message: `voucher ${v.id} nonce ${v.nonce} was already used`,
      }
      return { ok: false, ...bad }
    }
    throw new Error('deferred voucher heads: the tuple could not be loaded from Postgres (collections kept racing)')
  }

  /** Gives a reservation back while it is still the head; false when a newer voucher or a reload replaced it. */
  async release(h: HeldVoucher): Promise<boolean> {
    return (
      (await this.#redis.tollgateDeferredRelease!(this.#hashKey(h.tuple), field(h.voucherId), h.digest, h.previous)) ===
      1
    )
  }

  /** A collection read what the escrow paid for a voucher id (after writing it to Postgres). */
  async collected(t: VoucherTuple, id: Hex, collected: bigint): Promise<void> {
    await this.#redis.tollgateDeferredCollected!(this.#hashKey(t), this.#epochKey(t), field(id), collected.toString())
  }

  /** What the escrow account holds that the buyer cannot take back, as read at `atMs`; kept unless a later read is. */
  async account(t: VoucherTuple, available: bigint, atMs: number): Promise<void> {
    const capped = available > MAX_TRACKED ? MAX_TRACKED : available
    await this.#redis.tollgateDeferredAccount!(this.#hashKey(t), capped.toString(), Math.floor(atMs), TTL_MS)
  }

  /** Stops this process's liveness key: its reservations count as a dead process's from now on. */
  async close(): Promise<void> {
    if (this.#heartbeat) clearInterval(this.#heartbeat)
    this.#heartbeat = undefined
    await this.#redis.del(this.#liveKey(this.#owner)).catch(() => {})
  }

  /** Drops the tuple's cached heads; the next call loads them from Postgres. */
  async invalidate(t: VoucherTuple): Promise<void> {
    await this.#invalidate(t)
  }

  // the payer's block (an uncollectable voucher, a failed settlement): the same key the exact guard reads
  #blockedKey(buyer: string) {
    return this.#key('blocked', redisTag(buyer))
  }
  #liveKey(o: string) {
    return this.#key('dvlive', o)
  }
  // the buyer is the hash tag: on a Redis Cluster a tuple's hash and epoch share one slot, so each
  // script touches one slot (docs/architecture.md "Redis Cluster")
  #hashKey(t: VoucherTuple) {
    return this.#key('dv', redisTag(t.buyer), t.escrow, t.seller, t.asset)
  }
  #epochKey(t: VoucherTuple) {
    return this.#key('dvepoch', redisTag(t.buyer), t.escrow, t.seller, t.asset)
  }

  #beat() {
    return this.#redis.set(this.#liveKey(this.#owner), '1', 'PX', LIVENESS_TTL_MS)
  }
  async #startBeating(): Promise<void> {
    if (this.#heartbeat) return
    this.#heartbeat = setInterval(() => void this.#beat().catch(() => {}), LIVENESS_EVERY_MS)
    this.#heartbeat.unref()
    await this.#beat()
  }
  /** whether the process that made a reservation still runs (its key is there) */
  async #alive(o: string): Promise<boolean> {
    if (o === this.#owner) return true
    if (o === '-' || o === '') return false
    return (await this.#redis.exists(this.#liveKey(o))) === 1
  }

  /** The heads of a tuple as Postgres has them, into Redis; false when a collection raced the read. */
  async #load(t: VoucherTuple): Promise<boolean> {
    const redis = this.#redis
    const seen = (await redis.get(this.#epochKey(t))) ?? ''
    const [rows, block] = await Promise.all([
      headsOf(this.#db, t)
        .select(['voucher_id', 'nonce', 'value_aggregate', 'timestamp', 'collected', 'digest'])
        .execute(),
      // a block is durable in Postgres; Redis may have lost its copy (flushed) with the heads
      this.#db.selectFrom('payer_blocks').select('reason').where('payer', '=', t.buyer).executeTakeFirst(),
    ])
    if (block) await redis.set(this.#blockedKey(t.buyer), block.reason)
    const pairs = rows.flatMap((r) => [
      field(r.voucher_id),
      `${r.nonce}:${r.value_aggregate}:${r.timestamp}:${r.collected}:0:-:${r.digest}`,
    ])
    const stored = await redis.tollgateDeferredLoad!(this.#hashKey(t), this.#epochKey(t), seen, TTL_MS, ...pairs)
    return stored !== 0
  }

  /** The Postgres head of one voucher id, if any. */
  async #storedHead(t: VoucherTuple, id: Hex): Promise<bigint | undefined> {
    const r = await sql<{ nonce: string }>`
      select nonce::text as nonce from deferred_vouchers
      where escrow = ${t.escrow} and buyer = ${t.buyer} and seller = ${t.seller} and asset = ${t.asset}
        and voucher_id = ${id} order by nonce desc limit 1`.execute(this.#db)
    return r.rows[0] ? BigInt(r.rows[0].nonce) : undefined
  }

  /** Redis behind Postgres, or a reservation a dead process never wrote: Postgres decides (reload the tuple). */
  async #stale(t: VoucherTuple, id: Hex, head: Head | undefined, nowMs: number): Promise<boolean> {
    const stored = await this.#storedHead(t, id)
    const behind = stored !== undefined && (head === undefined || stored > head.nonce)
    const unwritten = head !== undefined && head.reservedAt > 0 && (stored === undefined || stored < head.nonce)
    const orphan = unwritten && (nowMs - head.reservedAt > STALE_RESERVATION_MS || !(await this.#alive(head.owner)))
    return behind || orphan
  }

  #invalidate(t: VoucherTuple) {
    return this.#redis.tollgateDeferredInvalidate!(this.#hashKey(t), this.#epochKey(t))
  }

  async #once(v: DeferredVoucher, digest: Hex, amount: bigint, balance: bigint, balanceAt: number, nowMs: number) {
    const t: VoucherTuple = { escrow: v.escrow, buyer: v.buyer, seller: v.seller, asset: v.asset }
    const capped = balance > MAX_TRACKED ? MAX_TRACKED : balance
    const r = await this.#batch.add({
      key: this.#hashKey(t),
      blocked: this.#blockedKey(t.buyer),
      args: [
        field(v.id),
        v.nonce.toString(),
        v.valueAggregate.toString(),
        v.timestamp.toString(),
        amount.toString(),
        capped.toString(),
        nowMs,
        TTL_MS,
        v.nonce > 0n ? (v.nonce - 1n).toString() : '',
        v.valueAggregate >= amount ? (v.valueAggregate - amount).toString() : '',
        digest,
        balanceAt,
        this.#owner,
      ],
    })
    if (r instanceof Error) throw r
    return r
  }
}

const field = (id: string) => `i:${id}`

function defineScripts(redis: RedisWithHeads): void {
  if (redis.tollgateDeferredReserve) return
  // the number of keys varies with the batch, so it is passed per call
  redis.defineCommand('tollgateDeferredReserve', { lua: RESERVE_LUA })
  redis.defineCommand('tollgateDeferredRelease', { numberOfKeys: 1, lua: RELEASE_LUA })
  redis.defineCommand('tollgateDeferredLoad', { numberOfKeys: 2, lua: LOAD_LUA })
  redis.defineCommand('tollgateDeferredCollected', { numberOfKeys: 2, lua: COLLECTED_LUA })
  redis.defineCommand('tollgateDeferredInvalidate', { numberOfKeys: 2, lua: INVALIDATE_LUA })
  redis.defineCommand('tollgateDeferredAccount', { numberOfKeys: 1, lua: ACCOUNT_LUA })
}

/**
 * One batch of reservations. On a cluster: one script call per slot, sent together (a buyer's
 * reservations stay in one call, in arrival order); a slot whose call fails fails only its own reservations.
 */
async function reserveBatch(redis: RedisWithHeads, items: ReserveItem[]): Promise<([number, string] | Error)[]> {
  const out = new Map<ReserveItem, [number, string] | Error>()
  const groups = groupBySlot(redis, items, (i) => i.key)
  const calls = await Promise.allSettled(
    groups.map(async (group) => {
      const keys = group.flatMap((i) => [i.key, i.blocked])
      const flat = await redis.tollgateDeferredReserve!(keys.length, ...keys, ...group.flatMap((i) => i.args))
      group.forEach((item, i) => out.set(item, [Number(flat[i * 2]), String(flat[i * 2 + 1] ?? '')]))
    }),
  )
  calls.forEach((c, i) => {
    if (c.status === 'rejected') {
      const err = c.reason instanceof Error ? c.reason : new Error(String(c.reason))
      for (const item of groups[i]!) out.set(item, err)
    }
  })
  return items.map((i) => out.get(i)!)
}

/** What a reservation took (script code 0, `entry` the head it replaced): enough to give it back. */
function heldVoucher(t: VoucherTuple, v: DeferredVoucher, digest: Hex, entry: string): HeldVoucher {
  const previous = entry ?? ''
  return {
    tuple: t,
    voucherId: v.id,
    nonce: v.nonce,
    digest,
    previous,
    previousNonce: previous ? parseHead(previous).nonce : undefined,
  }
}

/** The refusal of script code 3 (over what is available; `entry`: what would be owed) or 4 (payer blocked). */
function refusal(code: 3 | 4, entry: string, balance: bigint): ReserveResult {
  if (code === 3)
    return {
      ok: false,
      insufficient: true,
      reason: 'invalid_deferred_evm_insufficient_escrow_balance',
      message: `the escrow holds ${balance} for this buyer, seller and asset that is not thawing; vouchers not yet collected would come to ${entry}`,
    }
  return {
    ok: false,
    reason: 'payer_blocked',
    message:
      'a served call of this buyer could not be collected from the escrow (or another payment failed): vouchers are refused; pay with exact, settled before the answer, which lifts the block',
  }
}

/** The tuple of a stored voucher row. */
export const tupleOfRow = (r: { escrow: string; buyer: string; seller: string; asset: string }): VoucherTuple => ({
  escrow: r.escrow as Address,
  buyer: r.buyer as Address,
  seller: r.seller as Address,
  asset: r.asset as Address,
})

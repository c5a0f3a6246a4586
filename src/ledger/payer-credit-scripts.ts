/*
 * The Redis scripts of payer credit (payer-credit.ts), and how long its keys live. Each script
 * touches one payer's keys only, so it runs in one slot on a Redis Cluster.
 */

// The guard for a batch of payments, checked in arrival order in one script (so two payments of one
// payer in the same batch see each other's exposure, exactly as two separate calls would).
// Per payment, KEYS: nonce, balance, exposure, blocked, fresh, rebuild (6 each); ARGV: value,
// nonceTtlMs (2 each). Returns a flat list of [code, stale] pairs, code 0 ok, 1 nonce used, 2 blocked
// (reserved, settle before serving), 3 insufficient, 4 unknown balance. While a rebuild of the
// payer's exposure is under way, each reservation is also counted in the rebuild's hash.
export const GUARD_LUA = `
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
export const RELEASE_LUA = `
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
export const STAMPED_SET_LUA = `
if (redis.call('GET', KEYS[3]) or '') ~= ARGV[2] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[3])
redis.call('SET', KEYS[2], '1', 'EX', ARGV[4])
return 1
`
// Starts counting the payer's reservations for a rebuild of its exposure, unless one is under way
// (or, with ARGV[3] = '1', unless the exposure exists: a warm-up after another caller's).
// KEYS: rebuild, exposure; ARGV: owner token, ttl ms, if missing. 1 when this caller owns the
// rebuild, 2 when the exposure was there already.
export const REBUILD_BEGIN_LUA = `
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
export const REBUILD_END_LUA = `
if redis.call('HGET', KEYS[2], 'o') == ARGV[2] then
  local total = tonumber(ARGV[1]) + tonumber(redis.call('HGET', KEYS[2], 'd'))
  redis.call('SET', KEYS[1], string.format('%d', total))
  redis.call('DEL', KEYS[2])
else
  redis.call('SET', KEYS[1], ARGV[1], 'NX')
end
return redis.call('GET', KEYS[1])
`
export const BALANCE_TTL_S = 3600
export const FRESH_TTL_S = 30
/** How long a rebuild may take before its count of reservations is dropped (its Postgres read timed out, or its process died). */
export const REBUILD_TTL_MS = 30_000

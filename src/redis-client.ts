import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis'
import { parseRedisUrl } from './redis-url.js'

export { parseRedisUrl, type RedisTarget } from './redis-url.js'

/**
 * The Redis every part of Tollgate talks to: one server, or a Redis Cluster. Code takes this type
 * and never constructs a client itself; `createRedisClient` picks the kind from the URL.
 *
 * On a cluster a script, MULTI or multi-key command may only touch keys of one hash slot: keys
 * that one call uses together share a hash tag (`redisTag`), see docs/architecture.md "Redis Cluster".
 */
export type RedisClient = Redis | Cluster

/**
 * The one place a Redis client is built. `options` are per-connection options (on a cluster they
 * apply to each node's connection). A cluster client follows MOVED/ASK, refreshes its slot map
 * when a master fails over and loads scripts (`defineCommand`) on each node as it first uses them
 * (EVALSHA, then EVAL on NOSCRIPT).
 */
export function createRedisClient(url: string, options: RedisOptions = {}): RedisClient {
  const target = parseRedisUrl(url)
  if (target.kind === 'single') return new Redis(url, options)
  const { lazyConnect, enableOfflineQueue, ...perNode } = options
  const clusterOptions: ClusterOptions = {
    lazyConnect,
    enableOfflineQueue,
    // during a failover: retry MOVED / CLUSTERDOWN / TRYAGAIN briefly, then fail (callers fail closed)
    retryDelayOnFailover: 100,
    retryDelayOnClusterDown: 100,
    retryDelayOnTryAgain: 100,
    maxRedirections: 16,
    slotsRefreshTimeout: 2000,
    clusterRetryStrategy: (times) => Math.min(times * 200, 2000),
    redisOptions: {
      ...perNode,
      username: target.username,
      password: target.password,
      ...(target.tls ? { tls: {} } : {}),
    },
  }
  return new Cluster(target.nodes, clusterOptions)
}

/**
 * A hash tag for a key part: every key holding the same tag lands in the same cluster slot, so a
 * script may use them together. The deployment prefix never holds braces (config refuses them), so
 * this is the key's first `{…}` and the one Redis hashes.
 *
 * @example deps.key('nonce', redisTag(payer), nonce) // tollgate:sandbox:nonce:{0xab…}:0x12…
 */
export function redisTag(id: string): string {
  return `{${id.replace(/[{}]/g, '')}}`
}

/** The prefix of this deployment's BullMQ queues: hash-tagged, so a queue's keys share one slot (BullMQ's rule on a cluster). */
export function bullPrefix(redisPrefix: string): string {
  return `{${redisPrefix}}`
}

/** A new connection like `redis` (for SUBSCRIBE, which takes a connection of its own), cluster or not. */
export function duplicateClient(redis: RedisClient): RedisClient {
  return redis instanceof Cluster ? redis.duplicate() : redis.duplicate()
}

/** The servers holding keys: the cluster's masters, or the one server (SCAN runs per server). */
export function keyServers(redis: RedisClient): Redis[] {
  return redis instanceof Cluster ? redis.nodes('master') : [redis]
}

/** CRC16-CCITT (XMODEM), the checksum Redis Cluster hashes keys with. */
function crc16(buf: Buffer): number {
  let crc = 0
  for (const byte of buf) {
    crc ^= byte << 8
    for (let i = 0; i < 8; i++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff
  }
  return crc
}

/** The cluster slot (0–16383) of `key`: of its first non-empty `{…}` hash tag when it has one, as Redis computes it. */
export function keySlot(key: string): number {
  const open = key.indexOf('{')
  if (open >= 0) {
    const close = key.indexOf('}', open + 1)
    if (close > open + 1) key = key.slice(open + 1, close)
  }
  return crc16(Buffer.from(key)) % 16384
}

/**
 * Groups `items` so that each group's keys may go to one script call: by the slot of `keyOf(item)`
 * on a cluster; on one server, all in one group (one call, as before clusters).
 */
export function groupBySlot<T>(redis: RedisClient, items: T[], keyOf: (item: T) => string): T[][] {
  if (!(redis instanceof Cluster)) return items.length ? [items] : []
  const groups = new Map<number, T[]>()
  for (const it of items) {
    const slot = keySlot(keyOf(it))
    const g = groups.get(slot)
    if (g) g.push(it)
    else groups.set(slot, [it])
  }
  return [...groups.values()]
}

/** Resolves once `redis` is connected (a cluster: once it knows its slots), rejects after `ms`. */
export async function whenReady(redis: RedisClient, ms = 10_000): Promise<void> {
  if (redis.status === 'ready') return
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      redis.off('ready', ready)
      reject(new Error(`Redis not ready after ${ms} ms (status ${redis.status})`))
    }, ms)
    const ready = () => {
      clearTimeout(timer)
      resolve()
    }
    redis.once('ready', ready)
  })
}

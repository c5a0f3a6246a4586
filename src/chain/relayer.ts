import { randomBytes } from 'node:crypto'
import type { RedisClient } from '../redis-client.js'
import { keccak256, parseTransaction, type Address, type Hex, type PrivateKeyAccount, type PublicClient } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'

/** A settlement relayer whose key is configured: it signs batches and their fee-bump replacements. */
export interface Relayer {
  account: PrivateKeyAccount
  address: Address
}

/**
 * A relayer known by its address only: its key was removed from RELAYER_PRIVATE_KEYS while a batch
 * of its was pending. Its batches can still be read and their signed transactions rebroadcast
 * (that needs no key), never replaced.
 */
export interface WatchOnlyRelayer {
  account?: undefined
  address: Address
}

export function relayersFromKeys(keys: readonly Hex[]): Relayer[] {
  return keys.map((k) => {
    const account = privateKeyToAccount(k)
    return { account, address: account.address }
  })
}

const RELEASE_LUA = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end`
const EXTEND_LUA = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) else return 0 end`

/** How long a relayer lock outlives its holder: a worker killed with -9 blocks its relayer this long. */
export const RELAYER_LOCK_TTL_MS = 10_000

/**
 * One holder per relayer at a time (across every worker process), so a relayer's nonces never
 * collide. The lock only serializes; the nonce itself comes from the chain's pending count. The
 * TTL is short and the holder extends it while it works (`hold`), so a dead worker's relayer is
 * free again within `ttlMs`.
 */
export function createRelayerLock(redis: RedisClient, key: (...p: string[]) => string, ttlMs = RELAYER_LOCK_TTL_MS) {
  const k = (address: string) => key('settlement', 'relayer-lock', address.toLowerCase())
  const lock = {
    async acquire(address: string): Promise<string | null> {
      const token = randomBytes(12).toString('hex')
      const ok = await redis.set(k(address), token, 'PX', ttlMs, 'NX')
      return ok === 'OK' ? token : null
    },
    /** false when the lock is no longer ours (expired, or Redis lost it) */
    async extend(address: string, token: string): Promise<boolean> {
      return (await redis.eval(EXTEND_LUA, 1, k(address), token, String(ttlMs)).catch(() => 0)) === 1
    },
    async release(address: string, token: string): Promise<void> {
      await redis.eval(RELEASE_LUA, 1, k(address), token).catch(() => {})
    },
    /**
     * Runs fn holding the lock (extended every ttl/3); null when someone else holds it. `held()`
     * turns false once an extension fails (the lock expired or Redis lost it): fn should then
     * stop starting new transactions.
     */
    async hold<T>(address: string, fn: (held: () => boolean) => Promise<T>): Promise<{ value: T } | null> {
      const token = await lock.acquire(address)
      if (!token) return null
      let ours = true
      const timer = setInterval(
        () => void lock.extend(address, token).then((ok) => (ours &&= ok)),
        Math.max(100, Math.floor(ttlMs / 3)),
      )
      try {
        return { value: await fn(() => ours) }
      } finally {
        clearInterval(timer)
        await lock.release(address, token)
      }
    },
  }
  return lock
}

export interface SignedTx {
  hash: Hex
  raw: Hex
  nonce: number
  maxFeePerGas: bigint
  maxPriorityFeePerGas: bigint
}

/** Fee bump of a replacement: nodes require >= 10% on both fee fields; we add 12.5%. */
const REPLACEMENT_BUMP_PERMILLE = 1125n
const bumped = (fee: bigint) => (fee * REPLACEMENT_BUMP_PERMILLE + 999n) / 1000n

/**
 * Signs (does not send) a transaction from the relayer with the next pending nonce and a capped
 * EIP-1559 fee, so its hash can be recorded before it exists anywhere else.
 */
export async function signRelayerTx(
  client: PublicClient,
  relayer: Relayer,
  tx: { to: Address; data: Hex; gas: bigint; chainId: number; maxFeePerGasCap: bigint },
): Promise<SignedTx> {
  const [nonce, fees] = await Promise.all([
    client.getTransactionCount({ address: relayer.address, blockTag: 'pending' }),
    client.estimateFeesPerGas(),
  ])
  const maxFeePerGas = fees.maxFeePerGas > tx.maxFeePerGasCap ? tx.maxFeePerGasCap : fees.maxFeePerGas
  const maxPriorityFeePerGas = fees.maxPriorityFeePerGas > maxFeePerGas ? maxFeePerGas : fees.maxPriorityFeePerGas
  return sign(relayer, { ...tx, nonce, maxFeePerGas, maxPriorityFeePerGas })
}

async function sign(
  relayer: Relayer,
  tx: {
    to: Address
    data: Hex
    gas: bigint
    chainId: number
    nonce: number
    maxFeePerGas: bigint
    maxPriorityFeePerGas: bigint
  },
): Promise<SignedTx> {
  const raw = await relayer.account.signTransaction({
    type: 'eip1559',
    chainId: tx.chainId,
    to: tx.to,
    data: tx.data,
    gas: tx.gas,
    nonce: tx.nonce,
    maxFeePerGas: tx.maxFeePerGas,
    maxPriorityFeePerGas: tx.maxPriorityFeePerGas,
  })
  return {
    hash: keccak256(raw),
    raw,
    nonce: tx.nonce,
    maxFeePerGas: tx.maxFeePerGas,
    maxPriorityFeePerGas: tx.maxPriorityFeePerGas,
  }
}

/**
 * A replacement for a stuck transaction: same nonce, call and gas, both fee fields raised by
 * 12.5% (or to the current estimate when that is higher). Null when the cap leaves no room for
 * the 10% bump nodes require: then the original is only rebroadcast.
 */
export async function signReplacement(
  client: PublicClient,
  relayer: Relayer,
  stuck: Hex,
  maxFeePerGasCap: bigint,
): Promise<SignedTx | null> {
  const old = parseTransaction(stuck)
  if (
    old.type !== 'eip1559' ||
    old.nonce === undefined ||
    !old.to ||
    old.maxFeePerGas === undefined ||
    old.maxPriorityFeePerGas === undefined ||
    old.chainId === undefined
  )
    return null
  const fees = await client.estimateFeesPerGas()
  const max = (a: bigint, b: bigint) => (a > b ? a : b)
  let maxFeePerGas = max(bumped(old.maxFeePerGas), fees.maxFeePerGas)
  if (maxFeePerGas > maxFeePerGasCap) maxFeePerGas = maxFeePerGasCap
  let maxPriorityFeePerGas = max(bumped(old.maxPriorityFeePerGas), fees.maxPriorityFeePerGas)
  if (maxPriorityFeePerGas > maxFeePerGas) maxPriorityFeePerGas = maxFeePerGas
  // nodes refuse a replacement unless both fields rise by at least 10%
  if (maxFeePerGas * 10n < old.maxFeePerGas * 11n || maxPriorityFeePerGas * 10n < old.maxPriorityFeePerGas * 11n)
    return null
  return sign(relayer, {
    to: old.to,
    data: old.data ?? '0x',
    gas: old.gas ?? 0n,
    chainId: old.chainId,
    nonce: old.nonce,
    maxFeePerGas,
    maxPriorityFeePerGas,
  })
}

/** Broadcasts a signed transaction; "already known" means it is already in flight, which is fine. */
export async function broadcast(client: PublicClient, raw: Hex): Promise<void> {
  try {
    await client.request({ method: 'eth_sendRawTransaction', params: [raw] })
  } catch (err) {
    const m = String((err as Error).message).toLowerCase()
    if (m.includes('already known') || m.includes('already imported') || m.includes('nonce too low')) return
    throw err
  }
}

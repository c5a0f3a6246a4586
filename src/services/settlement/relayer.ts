import { randomBytes } from 'node:crypto'
import type { Redis } from 'ioredis'
import { keccak256, type Address, type Hex, type PrivateKeyAccount, type PublicClient } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'

export interface Relayer {
  account: PrivateKeyAccount
  address: Address
}

export function relayersFromKeys(keys: readonly Hex[]): Relayer[] {
  return keys.map((k) => {
    const account = privateKeyToAccount(k)
    return { account, address: account.address }
  })
}

const RELEASE_LUA = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end`

/**
 * One holder per relayer at a time (across every worker process), so a relayer's nonces never
 * collide. The lock only serializes; the nonce itself comes from the chain's pending count.
 */
export function relayerLock(redis: Redis, key: (...p: string[]) => string, ttlMs = 120_000) {
  const k = (address: string) => key('settlement', 'relayer-lock', address.toLowerCase())
  return {
    async acquire(address: string): Promise<string | null> {
      const token = randomBytes(12).toString('hex')
      const ok = await redis.set(k(address), token, 'PX', ttlMs, 'NX')
      return ok === 'OK' ? token : null
    },
    async release(address: string, token: string): Promise<void> {
      await redis.eval(RELEASE_LUA, 1, k(address), token).catch(() => {})
    },
  }
}

export interface SignedTx {
  hash: Hex
  raw: Hex
  nonce: number
}

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
  const raw = await relayer.account.signTransaction({
    type: 'eip1559',
    chainId: tx.chainId,
    to: tx.to,
    data: tx.data,
    gas: tx.gas,
    nonce,
    maxFeePerGas,
    maxPriorityFeePerGas,
  })
  return { hash: keccak256(raw), raw, nonce }
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

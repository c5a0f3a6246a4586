/**
 * Reads a buyer's escrow account from the chain for the `deferred` scheme: its balance for a
 * seller and asset (`getAccount`), and for the challenge's `extra.account` the asset's allowance to
 * the escrow and its EIP-2612 nonce. Answers are cached briefly per (buyer, seller, asset), so a
 * burst of calls costs one read; a balance that looks too low is read again once before a refusal.
 */
import type { Address, PublicClient } from 'viem'
import { deferredEscrowAbi } from './escrow-abi.js'

const tokenAbi = [
  {
    type: 'function',
    name: 'allowance',
    stateMutability: 'view',
    inputs: [
      { name: 'owner', type: 'address' },
      { name: 'spender', type: 'address' },
    ],
    outputs: [{ name: '', type: 'uint256' }],
  },
  {
    type: 'function',
    name: 'nonces',
    stateMutability: 'view',
    inputs: [{ name: 'owner', type: 'address' }],
    outputs: [{ name: '', type: 'uint256' }],
  },
] as const

export interface EscrowAccount {
  balance: bigint
  assetAllowance: bigint
  assetPermitNonce: bigint
}

const MAX_ENTRIES = 10_000

interface CachedBalance {
  at: number
  value: Promise<bigint>
  /** the read answered (a pending one is shared, not served stale) */
  settled: boolean
  /** a background read is replacing it */
  refreshing: boolean
}

export class EscrowReader {
  readonly #chain: PublicClient
  readonly #escrow: Address
  readonly #ttlMs: number
  readonly #maxStaleMs: number
  readonly #balances = new Map<string, CachedBalance>()

  constructor(chain: PublicClient, escrow: Address, opts: { ttlMs?: number; maxStaleMs?: number } = {}) {
    this.#chain = chain
    this.#escrow = escrow
    this.#ttlMs = opts.ttlMs ?? 2_000
    this.#maxStaleMs = opts.maxStaleMs ?? 0
  }

  /**
   * The buyer's escrow balance for the seller and asset; `fresh` skips the cache. Rejects when the
   * chain cannot be read. An answer older than the ttl (but younger than `maxStaleMs`) is still
   * given while one read refreshes it in the background, so a call never waits on the RPC for a
   * balance it had: a cached balance can only be too high after a withdrawal, which needs a
   * thawing period (the collector collects before it ends), and too low after a deposit, which the
   * caller reads fresh before refusing.
   */
  balance(buyer: Address, seller: Address, asset: Address, opts: { fresh?: boolean } = {}): Promise<bigint> {
    const key = `${buyer}:${seller}:${asset}`
    const now = Date.now()
    const hit = this.#balances.get(key)
    if (hit && !opts.fresh) {
      const age = now - hit.at
      if (age < this.#ttlMs) return hit.value
      if (age < this.#maxStaleMs && hit.settled) {
        if (!hit.refreshing) {
          hit.refreshing = true
          this.#read(key, buyer, seller, asset, now).catch(() => {})
        }
        return hit.value
      }
    }
    return this.#read(key, buyer, seller, asset, now)
  }

  #read(key: string, buyer: Address, seller: Address, asset: Address, now: number): Promise<bigint> {
    const value = this.#chain
      .readContract({
        address: this.#escrow,
        abi: deferredEscrowAbi,
        functionName: 'getAccount',
        args: [buyer, seller, asset],
      })
      .then((a) => a.balance)
    if (this.#balances.size >= MAX_ENTRIES) this.#balances.clear()
    const entry: CachedBalance = { at: now, value, settled: false, refreshing: false }
    // a background refresh replaces the entry only once it has an answer
    const previous = this.#balances.get(key)
    if (!previous || !previous.refreshing) this.#balances.set(key, entry)
    value.then(
      () => {
        entry.settled = true
        this.#balances.set(key, entry)
      },
      () => {
        if (this.#balances.get(key) === entry) this.#balances.delete(key)
        else if (previous) previous.refreshing = false
      },
    )
    return value
  }

  /** What the escrow already paid out for a voucher id (`getVoucherCollected`); not cached. */
  collected(buyer: Address, seller: Address, asset: Address, voucherId: `0x${string}`): Promise<bigint> {
    return this.#chain.readContract({
      address: this.#escrow,
      abi: deferredEscrowAbi,
      functionName: 'getVoucherCollected',
      args: [buyer, seller, asset, voucherId],
    })
  }

  /** The spec's `extra.account`: balance, the asset's allowance to the escrow, its permit nonce. */
  async account(buyer: Address, seller: Address, asset: Address): Promise<EscrowAccount> {
    const [balance, assetAllowance, assetPermitNonce] = await Promise.all([
      this.balance(buyer, seller, asset),
      this.#chain.readContract({
        address: asset,
        abi: tokenAbi,
        functionName: 'allowance',
        args: [buyer, this.#escrow],
      }),
      this.#chain
        .readContract({ address: asset, abi: tokenAbi, functionName: 'nonces', args: [buyer] })
        .catch(() => 0n),
    ])
    return { balance, assetAllowance, assetPermitNonce }
  }
}

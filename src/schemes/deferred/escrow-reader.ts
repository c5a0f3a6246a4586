/**
 * Reads a buyer's escrow account from the chain for the `deferred` scheme: its balance for a
 * seller and asset (`getAccount`), what of it the buyer cannot take back (`available`: the balance
 * less its thawing amount), and for the challenge's `extra.account` the asset's allowance to the
 * escrow and its EIP-2612 nonce. Answers are cached briefly per (buyer, seller, asset), so a burst
 * of calls costs one read; a balance that looks too low is read again once before a refusal, and
 * `forget` (the escrow's events, escrow-watch.ts) drops an account the buyer changed.
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

/** What a read of `getAccount` gave, and when it began (ms). */
export interface AccountRead {
  balance: bigint
  thawingAmount: bigint
  /** balance - thawingAmount: what stays for the seller whatever the buyer does */
  available: bigint
  atMs: number
}

interface CachedBalance {
  at: number
  value: Promise<AccountRead>
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
  /** key (or `buyer:*`) → when it was last forgotten: a read begun before that is not cached */
  readonly #forgotten = new Map<string, number>()

  constructor(chain: PublicClient, escrow: Address, opts: { ttlMs?: number; maxStaleMs?: number } = {}) {
    this.#chain = chain
    this.#escrow = escrow
    this.#ttlMs = opts.ttlMs ?? 2_000
    this.#maxStaleMs = opts.maxStaleMs ?? 0
  }

  /**
   * The buyer's escrow account for the seller and asset; `fresh` skips the cache. Rejects when the
   * chain cannot be read. An answer older than the ttl (but younger than `maxStaleMs`) is still
   * given while one read refreshes it in the background, so a call never waits on the RPC for an
   * account it had. A cached account is too high after a thaw, a withdrawal or a collection: the
   * escrow's events drop it (`forget`), and the collector stores each account it reads after a
   * collection in Redis, where the newest read wins (voucher-heads.ts); too low after a deposit,
   * which the caller reads fresh before refusing.
   */
  read(buyer: Address, seller: Address, asset: Address, opts: { fresh?: boolean } = {}): Promise<AccountRead> {
    const key = `${buyer.toLowerCase()}:${seller.toLowerCase()}:${asset.toLowerCase()}`
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

  /** The balance alone (the challenge's `extra.account`). */
  async balance(buyer: Address, seller: Address, asset: Address, opts: { fresh?: boolean } = {}): Promise<bigint> {
    return (await this.read(buyer, seller, asset, opts)).balance
  }

  /** Drops cached accounts: one (buyer, seller, asset), or every one of the buyer when seller is left out. */
  forget(buyer: Address, seller?: Address, asset?: Address): void {
    const b = buyer.toLowerCase()
    if (this.#forgotten.size >= MAX_ENTRIES) this.#forgotten.clear()
    if (seller && asset) {
      const key = `${b}:${seller.toLowerCase()}:${asset.toLowerCase()}`
      this.#forgotten.set(key, Date.now())
      this.#balances.delete(key)
      return
    }
    this.#forgotten.set(`${b}:*`, Date.now())
    for (const key of this.#balances.keys()) if (key.startsWith(`${b}:`)) this.#balances.delete(key)
  }

  /** whether a read begun at `at` predates a forget of its key */
  #outdated(key: string, at: number): boolean {
    const f = Math.max(this.#forgotten.get(key) ?? 0, this.#forgotten.get(`${key.slice(0, key.indexOf(':'))}:*`) ?? 0)
    return at <= f
  }

  #read(key: string, buyer: Address, seller: Address, asset: Address, now: number): Promise<AccountRead> {
    const value = this.#chain
      .readContract({
        address: this.#escrow,
        abi: deferredEscrowAbi,
        functionName: 'getAccount',
        args: [buyer, seller, asset],
      })
      .then((a) => ({
        balance: a.balance,
        thawingAmount: a.thawingAmount,
        available: a.balance > a.thawingAmount ? a.balance - a.thawingAmount : 0n,
        atMs: now,
      }))
    if (this.#balances.size >= MAX_ENTRIES) this.#balances.clear()
    const entry: CachedBalance = { at: now, value, settled: false, refreshing: false }
    // a background refresh replaces the entry only once it has an answer
    const previous = this.#balances.get(key)
    if (!previous || !previous.refreshing) this.#balances.set(key, entry)
    value.then(
      () => {
        entry.settled = true
        if (this.#outdated(key, now)) {
          if (this.#balances.get(key) === entry) this.#balances.delete(key)
        } else this.#balances.set(key, entry)
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

import type { PublicClient } from 'viem'
import { usdcAbi } from '../../chain/usdc-abi.js'
import { appError } from '../../errors.js'

/** Wallets whose balance is kept at most (the oldest is dropped past it). */
const MAX_WALLETS = 10_000

/**
 * Agent wallets' USDC balances, never older than `ttlMs`: one read at a time per wallet, started in
 * the background once the cached value is half that old, so steady traffic never waits on it.
 */
export class WalletBalances {
  readonly #chain: PublicClient
  readonly #usdc: `0x${string}`
  readonly #ttlMs: number
  readonly #cached = new Map<string, { value: bigint; at: number }>()
  readonly #reads = new Map<string, Promise<bigint>>()

  constructor(chain: PublicClient, usdc: `0x${string}`, ttlMs: number) {
    this.#chain = chain
    this.#usdc = usdc
    this.#ttlMs = ttlMs
  }

  get ttlMs(): number {
    return this.#ttlMs
  }

  /** The balance, at most `ttlMs` old; 503 when the chain does not answer. */
  async balanceOf(address: string): Promise<bigint> {
    const c = this.#cached.get(address)
    const age = c ? Date.now() - c.at : Infinity
    if (c && age < this.#ttlMs) {
      if (age > this.#ttlMs / 2 && !this.#reads.has(address)) void this.#read(address).catch(() => {})
      return c.value
    }
    return this.#read(address)
  }

  #read(address: string): Promise<bigint> {
    let p = this.#reads.get(address)
    if (p) return p
    const at = Date.now()
    p = this.#chain
      .readContract({ address: this.#usdc, abi: usdcAbi, functionName: 'balanceOf', args: [address as `0x${string}`] })
      .then(
        (value) => {
          if (this.#cached.size >= MAX_WALLETS && !this.#cached.has(address))
            this.#cached.delete(this.#cached.keys().next().value!)
          this.#cached.set(address, { value, at })
          return value
        },
        () => {
          throw appError('service_unavailable', {
            detail: 'the chain RPC did not answer; cannot check the agent balance, retry later',
          })
        },
      )
      .finally(() => this.#reads.delete(address))
    this.#reads.set(address, p)
    return p
  }
}

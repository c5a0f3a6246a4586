import { appError } from '../../errors.js'
import type { AgentRow } from '../accounts/agent-auth.js'
import { walletAad } from '../wallets/custodial-wallet.js'
import { decryptSecret } from '../../secrets/wallet-crypto.js'

/** Decrypted keys kept at most (the oldest is zeroed and dropped past it). */
const MAX_KEYS = 10_000

/**
 * Agents' custodial keys, decrypted once per process (and again when an agent's envelope changes).
 * Bounded; a key is zeroed when dropped; never logged or returned.
 */
export class CustodialKeys {
  readonly #masterKey: Buffer | undefined
  readonly #keys = new Map<string, { box: string; key: Buffer }>()

  constructor(masterKey: Buffer | undefined) {
    this.#masterKey = masterKey
  }

  /** The agent's private key; 503 when this deployment has no master key. */
  privateKeyOf(agent: Pick<AgentRow, 'id' | 'address' | 'encrypted_key'>): Buffer {
    const hit = this.#keys.get(agent.id)
    if (hit && hit.box === agent.encrypted_key) return hit.key
    if (!this.#masterKey)
      throw appError('service_unavailable', {
        detail: 'TOLLGATE_MASTER_KEY is not configured; agent wallets cannot sign',
      })
    const key = Buffer.from(
      decryptSecret([this.#masterKey], agent.encrypted_key, walletAad('agent', agent.address)).slice(2),
      'hex',
    )
    if (hit) this.#drop(agent.id)
    if (this.#keys.size >= MAX_KEYS) this.#drop(this.#keys.keys().next().value!)
    this.#keys.set(agent.id, { box: agent.encrypted_key, key })
    return key
  }

  /** Zeroes and forgets every key. */
  clear(): void {
    for (const id of [...this.#keys.keys()]) this.#drop(id)
  }

  #drop(id: string): void {
    this.#keys.get(id)?.key.fill(0)
    this.#keys.delete(id)
  }
}

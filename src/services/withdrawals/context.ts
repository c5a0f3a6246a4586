// What every withdrawal operation works with, built once per service: the sender's settings and
// relayers (wallets/authorization-sender.ts) and the wallet reservations (wallet-reservation.ts).
import type { CoreDeps } from '../../core-deps.js'
import { senderContext, type SenderContext, type SenderOptions } from '../wallets/authorization-sender.js'
import { createWalletReservations, type WalletReservations } from './wallet-reservation.js'

/**
 * Defaults: 5 attempts before a withdrawal that never reached the chain is `failed`; retries after
 * 5 s doubling up to 5 min; a 2 min lease; 30 s for a receipt; an authorization lives 1 h (unsent
 * by then, the withdrawal fails and its reservation goes).
 */
export type WithdrawalOptions = SenderOptions

export interface WithdrawalContext extends SenderContext {
  reservations: WalletReservations
}

/** Gas of a plain ETH transfer to an address (a contract receiving ETH may need more and is refused at estimate). */
export const ETH_TRANSFER_GAS = 21_000n

/** A failure that counts as an attempt (and is retried with backoff). */
export class AttemptFailed extends Error {}

/** The context of one withdrawals service, with the options' defaults filled in. */
export function withdrawalContext(deps: CoreDeps, opts: WithdrawalOptions): WithdrawalContext {
  const { config } = deps
  const sender = senderContext(deps, opts, {
    maxAttempts: 5,
    backoffMs: 5_000,
    maxBackoffMs: 5 * 60_000,
    leaseMs: 120_000,
    receiptTimeoutMs: 30_000,
    authorizationTtlS: 3600,
    feeCap: config.settlement.maxFeePerGasWei,
    relayerKeys: config.relayerKeys,
  })
  return { ...sender, reservations: createWalletReservations(deps) }
}

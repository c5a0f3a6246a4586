/**
 * Whether the platform can prove that a payment it signed for an agent will never be collected,
 * so that its amount may leave the agent's caps before its authorization expires. The agent's own
 * report never counts as proof: an agent that says "rejected" after being served would otherwise
 * spend past its caps. Proof comes from this platform's records only:
 *
 * - `voided`: the proxy's `payments` row for the same payer and nonce is voided (the call failed,
 *   was refused after recording, or never ended). A voided payment never moves again and is never
 *   settled.
 * - `not_recorded`: the payment was made out to this platform's proxy, the proxy has no row for it,
 *   and its nonce is now taken in the proxy's replay guard, so the proxy refuses it from now on
 *   (`invalid_exact_evm_nonce_already_used`). Taking fails while the proxy holds the nonce (a call
 *   in flight, or one it recorded): then the row decides.
 *
 * Anything else — served, settling, settled, a failed settlement, a call still running, a seller
 * that is not this platform — stays counted until settlement or the chain decides after
 * `validBefore` (the sweep in agent-payments-sweep.ts). The signed authorization itself stays valid until
 * then, so the sweep also re-checks on chain every payment released early, and counts it again if
 * it was used after all (docs/buyer.md, Known limits).
 */
import type { RedisClient } from '../../redis-client.js'
import type { Kysely } from 'kysely'
import type { Database, PaymentStatus } from '../../db/database.js'
import { paymentVerdict } from '../../proxy/payment-verdict.js'
import { createPayerCredit } from '../../ledger/payer-credit.js'

/** What the proxy knows of a payment the agent signed (its `payments` row by payer and nonce). */
export interface SellerRecord {
  id: string
  status: PaymentStatus
  tx_hash: string | null
  failure_reason: string | null
}

export type CollectionProof =
  | { proven: true; reason: 'voided' | 'not_recorded'; seller: SellerRecord | undefined }
  | { proven: false; reason: 'seller_recorded' | 'in_flight' | 'other_seller'; seller: SellerRecord | undefined }

export interface ProofSubject {
  url: string
  payer: string
  nonce: string
  valid_before: string
}

/** Why a payment stays counted, for the agent (the outcome answer's `reason`). */
export function proofReason(p: CollectionProof): string {
  switch (p.reason) {
    case 'voided':
      return `released: the proxy voided this payment (${p.seller?.failure_reason ?? 'voided'}), so it will never be settled`
    case 'not_recorded':
      return 'released: the proxy never recorded this payment, and now refuses it (its nonce is taken), so it will never be settled'
    case 'seller_recorded':
      return `still counted: the proxy recorded this payment as ${p.seller!.status}, so only its settlement or expiry decides (${paymentVerdict(p.seller!).message})`
    case 'in_flight':
      return 'still counted: the proxy is handling this payment right now; report again once the call has ended, or the sweep decides after valid_before'
    case 'other_seller':
      return 'still counted: the seller is not this platform, so only the chain can show that the payment was not collected; the sweep releases it if its authorization expires unused (after valid_before)'
  }
}

export function createCollectionProofs(deps: {
  db: Kysely<Database>
  redis: RedisClient
  key(...parts: string[]): string
  proxyOrigin: string | undefined
  now(): Date
}) {
  const { db } = deps
  const nonceKey = createPayerCredit(deps).keys.nonce

  const sellerRecord = (payer: string, nonce: string): Promise<SellerRecord | undefined> =>
    db
      .selectFrom('payments')
      .select(['id', 'status', 'tx_hash', 'failure_reason'])
      .where('payer', '=', payer)
      .where('nonce', '=', nonce)
      .executeTakeFirst()

  function ownProxy(url: string): boolean {
    try {
      return deps.proxyOrigin !== undefined && new URL(url).origin === deps.proxyOrigin
    } catch {
      return false
    }
  }

  return {
    sellerRecord,
    /**
     * Proof that `p` will never be collected. With `takeNonce` (the agent reports a failure), a
     * payment to this proxy that it never recorded has its nonce taken first, the way the proxy's
     * own replay guard takes it (same key; kept until 60 s past validBefore, as the proxy keeps it).
     */
    async check(p: ProofSubject, opts: { takeNonce: boolean }): Promise<CollectionProof> {
      const payer = p.payer.toLowerCase()
      const nonce = p.nonce.toLowerCase()
      let taken = false
      if (opts.takeNonce && ownProxy(p.url)) {
        const ttlMs = Math.max(1000, Number(p.valid_before) * 1000 - deps.now().getTime() + 60_000)
        taken = (await deps.redis.set(nonceKey(payer, nonce), '1', 'PX', ttlMs, 'NX')) === 'OK'
      }
      // read after taking: a row committed before the take is seen; none can be written after it
      const seller = await sellerRecord(payer, nonce)
      if (seller?.status === 'voided') return { proven: true, reason: 'voided', seller }
      if (seller) return { proven: false, reason: 'seller_recorded', seller }
      if (taken) return { proven: true, reason: 'not_recorded', seller }
      // a payment to this proxy whose nonce the proxy holds without a row yet: a call being verified
      return { proven: false, reason: opts.takeNonce && ownProxy(p.url) ? 'in_flight' : 'other_seller', seller }
    },
  }
}

export type CollectionProofs = ReturnType<typeof createCollectionProofs>

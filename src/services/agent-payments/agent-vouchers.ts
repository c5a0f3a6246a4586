/**
 * The `deferred` half of agent payments: what an agent's next voucher to a seller aggregates onto,
 * and whether its escrow balance there needs a deposit first. The latest voucher is the seller's
 * `extra.voucher` when it is really the agent's (sign-deferred.ts checks), else, for this
 * platform's own proxy, the head of the voucher store (same database); else a new voucher id. The
 * escrow account is read from the chain, not from the challenge.
 */
import type { Kysely } from 'kysely'
import { recoverTypedDataAddress, type Address, type PublicClient } from 'viem'
import type { Requirement } from '../../client/challenge.js'
import { deferredTerms, type DeferredTerms } from '../../client/sign-deferred.js'
import type { Database } from '../../db/database.js'
import { EscrowReader } from '../../schemes/deferred/escrow-reader.js'
import { voucherTypedData } from '../../schemes/deferred/typed-data.js'
import { createVoucherStore, headsOf } from '../../schemes/deferred/voucher-store.js'

export interface VoucherPlan {
  terms: DeferredTerms
  /** what the escrow must hold for this voucher to be accepted: the uncollected aggregates after it (this platform's proxy's other voucher ids included) */
  owed: bigint
  /** the escrow balance now */
  balance: bigint
}

export function createAgentVouchers(deps: {
  db: Kysely<Database>
  chain: PublicClient
  escrow: Address
  chainId: number
}) {
  const store = createVoucherStore(deps.db)
  const reader = new EscrowReader(deps.chain, deps.escrow, { ttlMs: 0 })

  return {
    /** The next voucher's terms for `agent` (its latest voucher filled in) and the escrow balance it needs. */
    async plan(agent: Address, req: Requirement): Promise<VoucherPlan> {
      const terms = await deferredTerms(req, agent)
      const tuple = {
        escrow: deps.escrow.toLowerCase() as Address,
        buyer: agent.toLowerCase() as Address,
        seller: terms.seller.toLowerCase() as Address,
        asset: terms.asset.toLowerCase() as Address,
      }
      const [head, account] = await Promise.all([
        store.latest(tuple, BigInt(deps.chainId)),
        reader.account(agent, terms.seller, terms.asset),
      ])
      terms.account = account
      let collected = 0n
      if (
        head &&
        (!terms.latest || (head.voucher.id === terms.latest.id && head.voucher.nonce >= terms.latest.nonce))
      ) {
        const signer = await recoverTypedDataAddress({
          ...voucherTypedData(head.voucher),
          signature: head.signature,
        }).catch(() => undefined)
        if (signer?.toLowerCase() === tuple.buyer) {
          terms.latest = head.voucher
          collected = head.collected
        }
      } else if (terms.latest) {
        collected = await reader.collected(agent, terms.seller, terms.asset, terms.latest.id)
      }
      // the other voucher ids this platform's proxy holds for the same account draw on it too (as its balance check counts them)
      const others = await headsOf(deps.db, tuple).select(['voucher_id', 'value_aggregate', 'collected']).execute()
      let owed = (terms.latest ? terms.latest.valueAggregate - collected : 0n) + terms.amount
      for (const h of others)
        if (h.voucher_id !== terms.latest?.id) owed += BigInt(h.value_aggregate) - BigInt(h.collected)
      return { terms, owed, balance: account.balance }
    },
  }
}

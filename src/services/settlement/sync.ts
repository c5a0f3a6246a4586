import type { CoreDeps as Deps } from '../../core-deps.js'
import type { SettleNow } from '../../ledger/settle-now.js'
import { createSettler, type Settler, type SettlerOptions } from './settler.js'
import { claimOne } from '../../ledger/transitions.js'

/**
 * Sync settlement for endpoints that ask for it: settles one served payment before the response
 * leaves. Idempotent: a payment already settled answers with its hash; one another worker is
 * settling is waited for. A successful sync payment clears the payer's block.
 *
 * @example
 *   const app = await buildProxyApp(deps, { sync: createSyncSettlement(deps) })
 */
export function createSyncSettlement(
  deps: Deps,
  opts: SettlerOptions & { timeoutMs?: number; settler?: Settler } = {},
): SettleNow {
  const settler = opts.settler ?? createSettler(deps, opts)
  const timeoutMs = opts.timeoutMs ?? 30_000
  const read = (id: string) =>
    deps.db
      .selectFrom('payments')
      .select(['status', 'tx_hash', 'failure_reason', 'payer'])
      .where('id', '=', id)
      .executeTakeFirst()

  return {
    async settleNow(paymentId) {
      const deadline = Date.now() + timeoutMs
      const claimed = await claimOne(deps.db, paymentId)
      if (claimed) {
        const stats = await settler.settleClaimed([claimed], timeoutMs)
        if (!stats) return { ok: false, reason: 'no_relayer_available' }
      }
      for (;;) {
        const row = await read(paymentId)
        if (!row) return { ok: false, reason: 'unknown_payment' }
        if (row.status === 'settled' && row.tx_hash) {
          if (claimed) await settler.credit.unblock(row.payer)
          return { ok: true, txHash: row.tx_hash }
        }
        if (row.status === 'failed' || row.status === 'voided')
          return { ok: false, reason: row.failure_reason ?? row.status, final: true }
        if (row.status === 'verified') return { ok: false, reason: 'not_served' }
        // `served` again (requeued) or `settling` elsewhere: the batch worker will finish it
        if (Date.now() > deadline) return { ok: false, reason: 'settlement_pending' }
        await new Promise((r) => setTimeout(r, 100))
      }
    },
  }
}

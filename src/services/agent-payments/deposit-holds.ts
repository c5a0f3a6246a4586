/**
 * Deposit holds. A deposit authorization the platform signs from an agent wallet (a
 * batch-settlement deposit: ERC-3009 from the wallet into a channel) can move wallet funds until it
 * is used or expires, so the wallet's unsettled total counts it: `holdUnsettled` (ops/reserve.ts)
 * takes the hold before signing, under a member of its own (the official client picks the
 * authorization's nonce itself). Once signed, the authorization's nonce and validBefore are recorded
 * here beside the hold's member (`recordDepositHold`), so that a rebuild of the unsettled total
 * after Redis lost it still counts the ones that can be used (`openDepositHolds`), and the sweep
 * (agent-payments-sweep.ts) releases each once the chain proves it unusable: used (the balance
 * already lacks it) or past its validBefore unused.
 */
import { sql, type Kysely, type Selectable } from 'kysely'
import type { AgentDepositHoldsTable } from '../../db/agent-payments-tables.js'
import type { Database } from '../../db/database.js'
import type { Unsettled } from './spend-windows.js'

/** A signed deposit authorization and the hold that counts it. */
export interface DepositHold {
  /** the hold in the wallet's unsettled total (its own nonce, the deposit's amount) */
  held: Unsettled
  /** the authorization's nonce, as signed */
  nonce: string
  /** the authorization's validBefore (unix s), as signed */
  validBefore: bigint
  channelId: string
}

export type DepositHoldRow = Selectable<AgentDepositHoldsTable>

/** Records a signed deposit authorization (before it leaves the platform). */
export async function recordDepositHold(db: Kysely<Database>, h: DepositHold): Promise<void> {
  await db
    .insertInto('agent_deposit_holds')
    .values({
      payer: h.held.payer,
      nonce: h.nonce.toLowerCase(),
      hold_nonce: h.held.nonce.toLowerCase(),
      channel_id: h.channelId.toLowerCase(),
      amount: h.held.amount,
      valid_before: h.validBefore,
    })
    .execute()
}

/** The hold of a recorded deposit as the wallet's unsettled set counts it (its member, until its validBefore). */
export const heldDeposit = (
  r: Pick<DepositHoldRow, 'payer' | 'hold_nonce' | 'amount' | 'valid_before'>,
): Unsettled => ({
  payer: r.payer,
  nonce: r.hold_nonce,
  amount: BigInt(r.amount),
  validBefore: BigInt(r.valid_before),
})

/** The wallet's deposit authorizations still counted: not released, not past validBefore. */
export async function openDepositHolds(db: Kysely<Database>, payer: string, nowSeconds: number): Promise<Unsettled[]> {
  const rows = await db
    .selectFrom('agent_deposit_holds')
    .select(['payer', 'hold_nonce', 'amount', 'valid_before'])
    .where('payer', '=', payer)
    .where('released_at', 'is', null)
    .where('valid_before', '>', String(nowSeconds))
    .execute()
  return rows.map(heldDeposit)
}

/** The deposit holds not released yet, oldest validBefore first, for the sweep. */
export async function unreleasedDepositHolds(db: Kysely<Database>, limit: number): Promise<DepositHoldRow[]> {
  return db
    .selectFrom('agent_deposit_holds')
    .selectAll()
    .where('released_at', 'is', null)
    .orderBy('valid_before')
    .limit(limit)
    .execute()
}

/** Marks a deposit hold released; false when it already was. */
export async function markDepositHoldReleased(db: Kysely<Database>, r: Pick<DepositHoldRow, 'payer' | 'nonce'>) {
  const u = await db
    .updateTable('agent_deposit_holds')
    .set({ released_at: sql`now()` })
    .where('payer', '=', r.payer)
    .where('nonce', '=', r.nonce)
    .where('released_at', 'is', null)
    .returning('nonce')
    .executeTakeFirst()
  return u !== undefined
}

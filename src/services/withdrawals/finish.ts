// A pending withdrawal's end: confirmed or failed, with its webhook event in the same transaction,
// then its event log entry, its agent wallet's reservation settled or released, and a log line.
import { sql, type Transaction } from 'kysely'
import type { Database } from '../../db/database.js'
import type { Withdrawal } from '../../db/withdrawals-tables.js'
import { emitEvent } from '../events/outbox.js'
import type { WithdrawalContext } from './context.js'
import { event, held } from './rows.js'

/** The webhook event of a withdrawal's end, written in the transaction that ends it. */
function withdrawalEvent(trx: Transaction<Database>, w: Withdrawal, ok: boolean, extra: Record<string, unknown>) {
  return emitEvent(trx, {
    userId: w.user_id,
    type: ok ? 'withdrawal.confirmed' : 'withdrawal.failed',
    data: {
      withdrawal_id: w.id,
      source: w.source,
      from: w.from_address,
      to: w.to_address,
      asset: w.asset,
      amount: w.amount,
      ...extra,
    },
  })
}

/** Moves the withdrawal from pending to its end with `set`; false when it was no longer pending. */
async function end(
  ctx: WithdrawalContext,
  w: Withdrawal,
  set: Record<string, unknown>,
  ok: boolean,
  extra: Record<string, unknown>,
): Promise<boolean> {
  const row = await ctx.db.transaction().execute(async (trx) => {
    const row = await trx
      .updateTable('withdrawals')
      .set({ ...set, locked_until: null, updated_at: sql`now()` })
      .where('id', '=', w.id)
      .where('status', '=', 'pending')
      .returning('id')
      .executeTakeFirst()
    if (row) await withdrawalEvent(trx, w, ok, extra)
    return row
  })
  return row !== undefined
}

export async function confirm(
  ctx: WithdrawalContext,
  w: Withdrawal,
  txHash: string,
  block: bigint,
): Promise<'confirmed'> {
  const set = { status: 'confirmed', tx_hash: txHash, confirmed_block: block, confirmed_at: sql`now()`, error: null }
  if (await end(ctx, w, set, true, { tx_hash: txHash })) {
    await event(ctx.db, w.id, 'confirmed', 'pending', 'confirmed', null, { tx_hash: txHash, block: block.toString() })
    if (w.source === 'agent' && w.asset === 'USDC') await ctx.reservations.settled(held(w))
    ctx.log.info(
      { withdrawal: w.id, from: w.from_address, to: w.to_address, amount: w.amount, asset: w.asset, txHash },
      'withdrawal confirmed',
    )
  }
  return 'confirmed'
}

export async function fail(ctx: WithdrawalContext, w: Withdrawal, reason: string): Promise<'failed'> {
  if (await end(ctx, w, { status: 'failed', error: reason }, false, { reason })) {
    await event(ctx.db, w.id, 'failed', 'pending', 'failed', reason)
    if (w.source === 'agent' && w.asset === 'USDC') await ctx.reservations.release(held(w))
    ctx.log.error(
      { withdrawal: w.id, from: w.from_address, amount: w.amount, asset: w.asset, error: reason },
      'withdrawal failed',
    )
  }
  return 'failed'
}

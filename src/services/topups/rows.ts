// The topups table as the payer works on it: the lease on a due top-up, updates, and its end
// (confirmed or failed) with its webhook event in one transaction.
import { sql } from 'kysely'
import type { Topup } from '../../db/topups-tables.js'
import { emitEvent } from '../events/outbox.js'
import type { TopupContext } from './context.js'

/** Takes the lease on one due open top-up (so only one worker works on it). */
export async function claim(ctx: TopupContext, id: string): Promise<Topup | undefined> {
  return ctx.db
    .updateTable('topups')
    .set({ locked_until: sql`now() + ${`${ctx.leaseMs} milliseconds`}::interval` })
    .where('id', '=', id)
    .where('status', 'in', ['pending', 'submitted'])
    .where('next_attempt_at', '<=', sql<Date>`now()`)
    .where((eb) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<', sql<Date>`now()`)]))
    .returningAll()
    .executeTakeFirst()
}

export async function update(ctx: TopupContext, id: string, set: Record<string, unknown>): Promise<void> {
  await ctx.db
    .updateTable('topups')
    .set({ ...set, updated_at: sql`now()` })
    .where('id', '=', id)
    .execute()
}

/** Moves a top-up to its end state and writes its webhook event, in one transaction. */
export async function finish(
  ctx: TopupContext,
  t: Topup,
  set: Record<string, unknown>,
  type: 'topup.completed' | 'topup.failed',
) {
  await ctx.db.transaction().execute(async (trx) => {
    await trx
      .updateTable('topups')
      .set({ ...set, updated_at: sql`now()` })
      .where('id', '=', t.id)
      .execute()
    const agent = await trx
      .selectFrom('agents')
      .select(['user_id', 'name'])
      .where('id', '=', t.agent_id)
      .executeTakeFirst()
    if (agent)
      await emitEvent(trx, {
        userId: agent.user_id,
        type,
        data: {
          topup_id: t.id,
          agent: t.agent_address,
          agent_name: agent.name,
          amount: t.amount,
          tx_hash: (set.tx_hash as string | undefined) ?? null,
          error: (set.error as string | null | undefined) ?? null,
        },
      })
  })
}

export async function confirm(ctx: TopupContext, t: Topup, txHash: string, blockNumber: bigint): Promise<'confirmed'> {
  await finish(
    ctx,
    t,
    { status: 'confirmed', tx_hash: txHash, confirmed_block: blockNumber, locked_until: null, error: null },
    'topup.completed',
  )
  ctx.log.info({ topup: t.id, agent: t.agent_address, amount: t.amount, txHash }, 'top-up confirmed')
  return 'confirmed'
}

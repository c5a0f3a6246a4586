// Sending pending withdrawals: one process leases a due withdrawal, makes one attempt (send-usdc.ts,
// send-eth.ts), and a failed attempt is retried with backoff or, after the last one, fails it.
import { sql } from 'kysely'
import type { Withdrawal, WithdrawalStatus } from '../../db/withdrawals-tables.js'
import { errorSummary } from '../../logger.js'
import { retryDelay } from '../wallets/authorization-sender.js'
import type { WithdrawalContext } from './context.js'
import { fail } from './finish.js'
import { event, update } from './rows.js'
import { attemptEth } from './send-eth.js'
import { attemptUsdc } from './send-usdc.js'

async function recordFailure(ctx: WithdrawalContext, w: Withdrawal, err: unknown): Promise<WithdrawalStatus> {
  const attempts = w.attempts + 1
  // shown to the user; viem's full message would carry the operator's RPC URL
  const error = errorSummary(err)
  // a withdrawal that reached the chain may still land: it stays pending until it does or its authorization expires
  const reachedChain = w.tx_hash !== null
  if (attempts >= ctx.maxAttempts && !reachedChain) return fail(ctx, { ...w, attempts }, error)
  const delay = retryDelay(ctx, attempts)
  await update(ctx.db, w.id, { attempts, error, locked_until: null, next_attempt_at: new Date(Date.now() + delay) })
  await event(ctx.db, w.id, 'attempt_failed', 'pending', 'pending', error, { attempts })
  ctx.log.info({ withdrawal: w.id, attempts, retryInMs: delay, error }, 'withdrawal attempt failed; will retry')
  return 'pending'
}

/** Takes the lease on one due pending withdrawal (so only one process works on it). */
async function claim(ctx: WithdrawalContext, id: string): Promise<Withdrawal | undefined> {
  return ctx.db
    .updateTable('withdrawals')
    .set({ locked_until: sql`now() + ${`${ctx.leaseMs} milliseconds`}::interval` })
    .where('id', '=', id)
    .where('status', '=', 'pending')
    .where('next_attempt_at', '<=', sql<Date>`now()`)
    .where((eb) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<', sql<Date>`now()`)]))
    .returningAll()
    .executeTakeFirst()
}

/** Works on one withdrawal if it is due and no one else holds it; returns its status, or undefined when not taken. */
export async function processWithdrawal(ctx: WithdrawalContext, id: string): Promise<WithdrawalStatus | undefined> {
  const w = await claim(ctx, id)
  if (!w) return undefined
  try {
    return w.asset === 'ETH' ? await attemptEth(ctx, w) : await attemptUsdc(ctx, w)
  } catch (err) {
    // unknown errors (RPC down, ...) count too, so a broken withdrawal cannot retry forever
    const fresh = await ctx.db.selectFrom('withdrawals').selectAll().where('id', '=', id).executeTakeFirstOrThrow()
    if (fresh.status !== 'pending') return fresh.status
    return recordFailure(ctx, fresh, err)
  }
}

/** Works on every due pending withdrawal this process can lease (the worker's sweep). */
export async function processDueWithdrawals(
  ctx: WithdrawalContext,
  limit = 50,
): Promise<Array<{ id: string; status: WithdrawalStatus | undefined }>> {
  const due = await ctx.db
    .selectFrom('withdrawals')
    .select('id')
    .where('status', '=', 'pending')
    .where('next_attempt_at', '<=', sql<Date>`now()`)
    .orderBy('next_attempt_at')
    .limit(limit)
    .execute()
  const out: Array<{ id: string; status: WithdrawalStatus | undefined }> = []
  for (const { id } of due) out.push({ id, status: await processWithdrawal(ctx, id) })
  return out
}

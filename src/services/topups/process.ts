// Paying due top-ups: a worker leases each due open top-up, makes one attempt (pay.ts), and a
// failed attempt is retried with backoff or, after the last one, fails the top-up.
import { sql } from 'kysely'
import type { Topup } from '../../db/topups-tables.js'
import { errorSummary } from '../../logger.js'
import { retryDelay } from '../wallets/authorization-sender.js'
import type { TopupContext } from './context.js'
import { attempt } from './pay.js'
import { claim, finish, update } from './rows.js'

async function recordFailure(ctx: TopupContext, t: Topup, err: unknown): Promise<Topup['status']> {
  const attempts = t.attempts + 1
  // shown to the user (GET /v1/agents/{address}/top-ups) and logged: viem's full message would carry
  // the operator's RPC URL, which often holds the provider's API key
  const error = errorSummary(err)
  if (attempts >= ctx.maxAttempts) {
    await finish(ctx, t, { status: 'failed', attempts, error, locked_until: null }, 'topup.failed')
    ctx.log.error({ topup: t.id, agent: t.agent_address, amount: t.amount, attempts, error }, 'top-up failed')
    return 'failed'
  }
  const delay = retryDelay(ctx, attempts)
  // back to pending: if a submission exists it did not land (checked first on the next attempt)
  await update(ctx, t.id, {
    status: 'pending',
    attempts,
    error,
    locked_until: null,
    next_attempt_at: new Date(Date.now() + delay),
  })
  ctx.log.info(
    { topup: t.id, agent: t.agent_address, attempts, retryInMs: delay, error },
    'top-up attempt failed; will retry',
  )
  return 'pending'
}

/** Works on every due open top-up this worker can lease; returns what happened to each. */
export async function processDueTopups(
  ctx: TopupContext,
  limit = 50,
): Promise<Array<{ id: string; status: Topup['status'] }>> {
  const due = await ctx.db
    .selectFrom('topups')
    .select('id')
    .where('status', 'in', ['pending', 'submitted'])
    .where('next_attempt_at', '<=', sql<Date>`now()`)
    .orderBy('next_attempt_at')
    .limit(limit)
    .execute()
  const out: Array<{ id: string; status: Topup['status'] }> = []
  for (const { id } of due) {
    const t = await claim(ctx, id)
    if (!t) continue
    let status: Topup['status']
    try {
      status = await attempt(ctx, t)
    } catch (err) {
      // unknown errors (RPC down, ...) count too, so a broken top-up cannot retry forever
      const fresh = await ctx.db.selectFrom('topups').selectAll().where('id', '=', id).executeTakeFirstOrThrow()
      status = await recordFailure(ctx, fresh, err)
    }
    out.push({ id, status })
  }
  return out
}

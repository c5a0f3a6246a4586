import type { CoreDeps as Deps } from '../../core-deps.js'
import type { SenderLogger } from '../wallets/authorization-sender.js'
import { appError } from '../../errors.js'
import { isUuid } from '../accounts/key-rows.js'
import { withdrawalContext, type WithdrawalContext, type WithdrawalOptions } from './context.js'
import { processDueWithdrawals, processWithdrawal } from './process.js'
import { requestWithdrawal, type WithdrawalBody, type WithdrawalTarget } from './request.js'
import { withdrawalView, type WithdrawalView } from './view.js'

export type { WithdrawalBody, WithdrawalTarget } from './request.js'

/**
 * Money out (docs/api.md, "Withdrawals"): the owner sends USDC from an agent wallet or the funding
 * wallet, or the funding wallet's leftover ETH, to an address. `request` checks what may leave —
 * the balance minus what is signed and not settled yet, reserved where payments reserve
 * (wallet-reservation.ts), so a withdrawal and payments at the same time never both count on the
 * same funds — then records the withdrawal with its signed authorization before any relayer sees
 * it (request.ts, record.ts). `process` sends it (USDC: a relayer submits the authorization, as
 * top-ups do; ETH: the funding wallet's own transaction, recorded before it is broadcast:
 * process.ts, send-usdc.ts, send-eth.ts); the worker's `withdrawal-sweep` finishes what a process
 * left, so nothing is lost if one dies after sending.
 *
 * @example
 *   const w = createWithdrawals(deps)
 *   const { withdrawal } = await w.request(userId, { source: 'agent', address }, { to, amount: '1000000' }, 'key-1')
 *   await w.process(withdrawal.id)
 */
export function createWithdrawals(deps: Deps, opts: WithdrawalOptions = {}) {
  return withdrawalsOn(withdrawalContext(deps, opts))
}

function withdrawalsOn(ctx: WithdrawalContext) {
  return {
    /**
     * Checks and records a withdrawal (201), or finds the one this idempotency key made (replayed:
     * 200). 409 `withdrawal_exceeds_available` when the wallet's balance minus what it has signed and
     * not settled cannot cover it; 409 `idempotency_key_reused` for the key with another request.
     */
    request: (userId: string, target: WithdrawalTarget, body: WithdrawalBody, idempotencyKey: unknown) =>
      requestWithdrawal(ctx, userId, target, body, idempotencyKey),

    /** The user's withdrawal by id; 404 for another user's or an unknown one. */
    async get(userId: string, id: string): Promise<WithdrawalView> {
      if (!isUuid(id)) throw appError('not_found', { what: 'withdrawal' })
      const w = await ctx.db
        .selectFrom('withdrawals')
        .selectAll()
        .where('id', '=', id)
        .where('user_id', '=', userId)
        .executeTakeFirst()
      if (!w) throw appError('not_found', { what: 'withdrawal' })
      return withdrawalView(w)
    },

    /** Works on one withdrawal if it is due and no one else holds it; returns its status, or undefined when not taken. */
    process: (id: string) => processWithdrawal(ctx, id),

    /** Works on every due pending withdrawal this process can lease (the worker's sweep). */
    processDue: (limit?: number) => processDueWithdrawals(ctx, limit),

    /** The same service (relayers, locks, reservations) reporting through `logger`: the worker's jobs log where the worker does. */
    withLogger: (logger: SenderLogger) => withdrawalsOn({ ...ctx, log: logger }),
  }
}

export type Withdrawals = ReturnType<typeof createWithdrawals>

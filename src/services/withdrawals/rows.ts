// The withdrawals table and its event log: inserting a withdrawal, finding it by idempotency key,
// updating it, and the row's view as a wallet reservation.
import { sql, type Kysely, type Transaction } from 'kysely'
import type { Database } from '../../db/database.js'
import type { Withdrawal, WithdrawalStatus } from '../../db/withdrawals-tables.js'
import { appError } from '../../errors.js'
import type { HeldWithdrawal } from './wallet-reservation.js'

/** A withdrawal as `request` records it: what Postgres does not fill in. */
export type NewRow = Omit<
  Withdrawal,
  | 'id'
  | 'status'
  | 'relayer'
  | 'tx_hash'
  | 'confirmed_block'
  | 'attempts'
  | 'next_attempt_at'
  | 'locked_until'
  | 'error'
  | 'created_at'
  | 'updated_at'
  | 'confirmed_at'
  | 'tx_nonce'
  | 'raw_tx'
> &
  Partial<Pick<Withdrawal, 'tx_nonce' | 'raw_tx'>>

/** Inserts the withdrawal and its `created` event; undefined when the idempotency key was taken meanwhile. */
export async function insert(
  q: Kysely<Database> | Transaction<Database>,
  row: NewRow,
): Promise<Withdrawal | undefined> {
  const w = await q
    .insertInto('withdrawals')
    .values(row)
    .onConflict((oc) => oc.columns(['user_id', 'idempotency_key']).doNothing())
    .returningAll()
    .executeTakeFirst()
  if (w)
    await q
      .insertInto('withdrawal_events')
      .values({
        withdrawal_id: w.id,
        type: 'created',
        from_status: null,
        to_status: 'pending',
        reason: null,
        data: JSON.stringify({ to: w.to_address, amount: w.amount, asset: w.asset }),
      })
      .execute()
  return w
}

/** The user's withdrawal of this idempotency key; 409 `idempotency_key_reused` when it was another request. */
export async function existing(
  db: Kysely<Database>,
  userId: string,
  key: string,
  hash: string,
): Promise<Withdrawal | undefined> {
  const w = await db
    .selectFrom('withdrawals')
    .selectAll()
    .where('user_id', '=', userId)
    .where('idempotency_key', '=', key)
    .executeTakeFirst()
  if (w && w.request_hash !== hash) throw appError('idempotency_key_reused')
  return w
}

/** What an agent's USDC withdrawal holds in the wallet reservations. */
export const held = (
  w: Pick<Withdrawal, 'from_address' | 'auth_nonce' | 'amount' | 'valid_before'>,
): HeldWithdrawal => ({
  payer: w.from_address.toLowerCase(),
  nonce: w.auth_nonce!.toLowerCase(),
  amount: BigInt(w.amount),
  validBefore: BigInt(w.valid_before!),
})

/** Appends to the withdrawal's event log. */
export async function event(
  db: Kysely<Database>,
  id: string,
  type: string,
  from: WithdrawalStatus | null,
  to: WithdrawalStatus | null,
  reason: string | null,
  data?: Record<string, unknown>,
): Promise<void> {
  await db
    .insertInto('withdrawal_events')
    .values({
      withdrawal_id: id,
      type,
      from_status: from,
      to_status: to,
      reason,
      data: data ? JSON.stringify(data) : null,
    })
    .execute()
}

export async function update(db: Kysely<Database>, id: string, set: Record<string, unknown>): Promise<void> {
  await db
    .updateTable('withdrawals')
    .set({ ...set, updated_at: sql`now()` })
    .where('id', '=', id)
    .execute()
}

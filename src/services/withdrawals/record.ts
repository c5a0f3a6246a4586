// Records a checked withdrawal once what may leave the wallet covers it: an agent's USDC reserved
// where its payments reserve (wallet-reservation.ts); the funding wallet's USDC or ETH counted
// under a per-wallet lock against its balance and what it has signed and not settled.
import { sql, type Transaction } from 'kysely'
import { getAddress } from 'viem'
import type { Database } from '../../db/database.js'
import type { Withdrawal } from '../../db/withdrawals-tables.js'
import { appError } from '../../errors.js'
import { requireMasterKey } from '../../secrets/wallet-crypto.js'
import { custodialAccount } from '../wallets/custodial-wallet.js'
import { signTransferAuthorization } from '../wallets/transfer-authorization.js'
import { gasPrice, readUsdc } from './chain.js'
import { ETH_TRANSFER_GAS, type WithdrawalContext } from './context.js'
import { exceedsAvailable } from './refusal.js'
import { existing, held, insert, type NewRow } from './rows.js'

/** `created` false: a concurrent request with the same key recorded it first, and that one is the answer. */
export type Recorded = { w: Withdrawal; created: boolean }

/** A fresh EIP-3009 authorization of the withdrawal's amount from the custodial wallet to its address. */
function authorize(
  ctx: WithdrawalContext,
  kind: 'agent' | 'funding',
  base: NewRow,
  encryptedKey: string,
  nowS: number,
) {
  const account = custodialAccount([requireMasterKey(ctx.config)], kind, base.from_address, encryptedKey)
  return signTransferAuthorization(account, ctx.config.chain, base.to_address, BigInt(base.amount), nowS, ctx.ttlS)
}

/** Serialises the funding wallet's withdrawals (for the time of one transaction) across processes. */
const walletLock = (trx: Transaction<Database>, address: string) =>
  sql`select pg_advisory_xact_lock(hashtextextended(${`tollgate-withdraw:${address.toLowerCase()}`}, 0))`.execute(trx)

/** An agent's USDC withdrawal: signed, reserved against the wallet's balance, then recorded. */
export async function recordAgentUsdc(ctx: WithdrawalContext, base: NewRow, encryptedKey: string): Promise<Recorded> {
  const balance = await readUsdc(ctx, base.from_address)
  const nowMs = Date.now()
  const row = { ...base, ...(await authorize(ctx, 'agent', base, encryptedKey, Math.floor(nowMs / 1000))) }
  await ctx.reservations.reserve(held(row), balance, nowMs)
  try {
    const w = await insert(ctx.db, row)
    if (w) return { w, created: true }
  } catch (err) {
    await ctx.reservations.release(held(row))
    throw err
  }
  // the same key won a race with this request: its withdrawal is the answer, this one never happened
  await ctx.reservations.release(held(row))
  return { w: (await existing(ctx.db, base.user_id, base.idempotency_key, base.request_hash))!, created: false }
}

/** A funding wallet's withdrawal (USDC or ETH), checked and recorded under the wallet's lock. */
export async function recordFunding(ctx: WithdrawalContext, base: NewRow, encryptedKey: string): Promise<Recorded> {
  const w = await ctx.db.transaction().execute(async (trx) => {
    await walletLock(trx, base.from_address)
    return base.asset === 'ETH' ? insertFundingEth(ctx, trx, base) : insertFundingUsdc(ctx, trx, base, encryptedKey)
  })
  return w
    ? { w, created: true }
    : { w: (await existing(ctx.db, base.user_id, base.idempotency_key, base.request_hash))!, created: false }
}

/** One ETH withdrawal at a time per funding wallet, and the amount plus the gas of sending it within the balance. */
async function insertFundingEth(ctx: WithdrawalContext, trx: Transaction<Database>, base: NewRow) {
  const amount = BigInt(base.amount)
  const open = await trx
    .selectFrom('withdrawals')
    .select('id')
    .where('from_address', '=', base.from_address)
    .where('asset', '=', 'ETH')
    .where('status', '=', 'pending')
    .executeTakeFirst()
  if (open)
    throw appError('conflict', {
      detail: `an ETH withdrawal from this wallet is still pending (${open.id}); the funding wallet sends one ETH withdrawal at a time: retry once it is confirmed or failed`,
    })
  let balance: bigint
  let fee: bigint
  try {
    ;[balance, fee] = await Promise.all([
      ctx.chain.getBalance({ address: getAddress(base.from_address) }),
      gasPrice(ctx).then((g) => g.maxFeePerGas * ETH_TRANSFER_GAS),
    ])
  } catch {
    throw appError('service_unavailable', {
      detail: 'the chain RPC did not answer; cannot check the wallet balance, retry later',
    })
  }
  if (amount + fee > balance) throw exceedsAvailable('ETH', balance, 0n, amount, fee)
  return insert(trx, base)
}

/** The funding wallet's USDC: the amount within its balance less its open top-ups and pending withdrawals. */
async function insertFundingUsdc(
  ctx: WithdrawalContext,
  trx: Transaction<Database>,
  base: NewRow,
  encryptedKey: string,
) {
  const amount = BigInt(base.amount)
  const balance = await readUsdc(ctx, base.from_address)
  // what the wallet has signed and not settled: open top-ups it pays, and its pending withdrawals
  const r = await sql<{ total: string }>`
    select (coalesce((select sum(t.amount) from topups t join agents a on a.id = t.agent_id where a.user_id = ${base.user_id} and t.status in ('pending','submitted')), 0)
      + coalesce((select sum(amount) from withdrawals where from_address = ${base.from_address} and asset = 'USDC' and status = 'pending'), 0))::text as total`.execute(
    trx,
  )
  const unsettled = BigInt(r.rows[0]!.total)
  if (amount + unsettled > balance) throw exceedsAvailable('USDC', balance, unsettled, amount)
  return insert(trx, {
    ...base,
    ...(await authorize(ctx, 'funding', base, encryptedKey, Math.floor(Date.now() / 1000))),
  })
}

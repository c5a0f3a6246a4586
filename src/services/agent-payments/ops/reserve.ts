/**
 * Reservations against the agent's caps and its wallet's unsettled total (spend-windows.ts), with
 * the counters rebuilt from Postgres when Redis lost them: `reserve` for a payment, `holdUnsettled`
 * for an authorization that moves wallet funds without being spending (a deposit).
 */
import type { AgentRow } from '../../accounts/agent-auth.js'
import { randomNonce } from '../../../chain/sign-transfer-auth.js'
import { openWithdrawalAuthorizations } from '../../withdrawals/wallet-reservation.js'
import { openDepositHolds } from '../deposit-holds.js'
import { balanceError } from '../spend-answers.js'
import { heldOf } from '../spend-release.js'
import { spendWindowTotals, type Unsettled, type Windows } from '../spend-windows.js'
import type { AgentPaymentsContext } from './context.js'

/** Caps and balance check plus reservation in one Redis call (rebuilding counters from Postgres when missing). */
export async function reserve(
  ctx: AgentPaymentsContext,
  agent: AgentRow,
  w: Windows,
  amount: bigint,
  o: { peek?: boolean; balance: bigint | undefined; pay?: Unsettled; nowSeconds: number },
) {
  const caps = {
    daily: agent.cap_daily === null ? null : BigInt(agent.cap_daily),
    monthly: agent.cap_monthly === null ? null : BigInt(agent.cap_monthly),
  }
  const opts = {
    ...o,
    pay: o.pay ?? { payer: agent.address.toLowerCase(), nonce: `0x${'0'.repeat(64)}`, amount: 0n, validBefore: 0n },
  }
  let init: { day: bigint; month: bigint } | undefined
  for (let attempt = 0; ; attempt++) {
    const r = await ctx.windows.reserve(agent.id, w, amount, caps, { ...opts, init })
    if (attempt >= 3 || (r.kind !== 'init' && r.kind !== 'init-unsettled')) {
      ctx.capEvents.observe(agent, w, amount, r)
      return r
    }
    if (r.kind === 'init') init = await spendWindowTotals(ctx.db, agent.id, w)
    else await ctx.windows.rebuildUnsettled(opts.pay.payer, await openAuthorizations(ctx, opts.pay.payer, o.nowSeconds))
  }
}

/** What the chain may still move from this wallet: signed, not refused, not known settled, not expired. */
async function openAuthorizations(ctx: AgentPaymentsContext, payer: string, nowSeconds: number): Promise<Unsettled[]> {
  const rows = await ctx.db
    .selectFrom('agent_payments')
    .select(['nonce', 'amount', 'max_amount', 'valid_before'])
    .where('payer', '=', payer)
    .where('scheme', 'in', ['exact', 'upto']) // a voucher moves nothing from the wallet
    .where('status', 'in', ['reserved', 'accepted'])
    .where('tx_hash', 'is', null)
    .where('valid_before', '>', String(nowSeconds))
    .execute()
  // a pending withdrawal from the wallet is an unsettled authorization too, and so is a deposit's
  return [
    ...rows.map((r) => ({ ...heldOf({ ...r, payer }), validBefore: BigInt(r.valid_before) })),
    ...(await openWithdrawalAuthorizations(ctx.db, payer, nowSeconds)),
    ...(await openDepositHolds(ctx.db, payer, nowSeconds)),
  ]
}

/**
 * Counts a deposit's authorization in the wallet's unsettled total until `until` (it can move
 * wallet funds), or refuses it (`insufficient_balance`) when the wallet cannot cover it beside
 * what is signed. Taken before signing, under a nonce of its own: once signed, the caller records
 * the authorization beside it (deposit-holds.ts), which is what lets the sweep release it when the
 * chain says it was used or expired, and a rebuild count it.
 */
export async function holdUnsettled(
  ctx: AgentPaymentsContext,
  agent: AgentRow,
  amount: bigint,
  nowSeconds: number,
  until: number,
): Promise<Unsettled> {
  const payer = agent.address.toLowerCase()
  const balance = await ctx.balances.balanceOf(agent.address)
  const held: Unsettled = { payer, nonce: randomNonce(), amount, validBefore: BigInt(until) }
  let r = await ctx.windows.reserveUnsettled(held, balance, nowSeconds)
  if (r.kind === 'init-unsettled') {
    await ctx.windows.rebuildUnsettled(payer, await openAuthorizations(ctx, payer, nowSeconds))
    r = await ctx.windows.reserveUnsettled(held, balance, nowSeconds)
  }
  if (r.kind !== 'ok') throw balanceError(balance, r.unsettled, amount)
  return held
}

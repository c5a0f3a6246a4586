/**
 * The agent wallet's escrow accounts (deferred), gasless through the platform's relayers
 * (agent-escrow.ts): flush what finished thawing, and deposit. 503 when the deployment has no escrow.
 */
import { appError } from '../../../errors.js'
import type { AgentRow } from '../../accounts/agent-auth.js'
import { noEscrow, type AgentPaymentsContext } from './context.js'
import { holdUnsettled } from './reserve.js'

/** The seller address (payTo) of an escrow call's body, or a 400. */
function sellerOf(body: { seller?: unknown }): string {
  if (typeof body.seller !== 'string' || !/^0x[0-9a-fA-F]{40}$/.test(body.seller))
    throw appError(
      'invalid_parameter',
      { param: 'seller', detail: 'expected the seller address (payTo)' },
      { details: { param: 'seller' } },
    )
  return body.seller
}

/** Withdraws what finished thawing in the agent's escrow account with `seller` and starts thawing the rest (gasless). */
export async function flushEscrow(ctx: AgentPaymentsContext, agent: AgentRow, body: { seller?: unknown }) {
  if (!ctx.escrows) throw noEscrow()
  const seller = sellerOf(body)
  return ctx.escrows.flush(agent.address, ctx.keys.privateKeyOf(agent), seller, ctx.config.chain.usdc.address)
}

/**
 * Deposits from the agent wallet into its escrow account with `seller` (gasless). Not spending
 * (the caps do not count it); the wallet must cover it beside what is signed and not settled.
 */
export async function depositEscrow(
  ctx: AgentPaymentsContext,
  agent: AgentRow,
  body: { seller?: unknown; amount?: unknown },
) {
  if (!ctx.escrows) throw noEscrow()
  const seller = sellerOf(body)
  if (typeof body.amount !== 'string' || !/^[1-9][0-9]{0,15}$/.test(body.amount))
    throw appError(
      'invalid_parameter',
      { param: 'amount', detail: 'expected a positive decimal integer string of atomic USDC' },
      { details: { param: 'amount' } },
    )
  const amount = BigInt(body.amount)
  const nowSeconds = Math.floor(ctx.now().getTime() / 1000)
  const held = await holdUnsettled(ctx, agent, amount, nowSeconds, nowSeconds + 3600)
  try {
    return await ctx.escrows.deposit(agent.address, ctx.keys.privateKeyOf(agent), seller, ctx.config.chain.usdc, amount)
  } finally {
    // executed or never sent: the wallet balance read next says which; counted until every process re-read it
    await ctx.windows.releaseUnsettled(held, ctx.releaseAt()).catch(() => {})
  }
}

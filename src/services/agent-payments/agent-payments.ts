import type { AgentRow } from '../accounts/agent-auth.js'
import type { PayBody } from './choose-requirement.js'
import { createContext, noEscrow, type AgentPaymentsDeps } from './ops/context.js'
import { depositEscrow, flushEscrow } from './ops/escrow.js'
import { getPayment } from './ops/get.js'
import { outcome } from './ops/outcome.js'
import { pay } from './ops/pay.js'
import { signIn } from './ops/sign-in.js'
import { agentStatus } from './ops/status.js'

export type { AgentRow } from '../accounts/agent-auth.js'
export type { PayBody } from './choose-requirement.js'
export type { Headroom, PaymentQuote } from './spend-answers.js'
export type { AgentPaymentsDeps } from './ops/context.js'
export type { SignedPayment } from './ops/types.js'

/**
 * The buyer side: an agent hands over the 402 challenge it received; the platform picks a
 * requirement it may pay (choose-requirement.ts), reserves the amount against the agent's caps
 * atomically (spend-windows.ts), signs the authorization with the agent's custodial key
 * (custodial-keys.ts) in the requirement's scheme (ops/pay-*.ts) and records the reservation.
 * Agent keys are checked by accounts/agent-auth.ts; what the agent's reports cannot decide, the
 * sweep does (agent-payments-sweep.ts). Each operation is one file in ops/, sharing `ctx`
 * (ops/context.ts).
 *
 * @example
 *   const p = await agentPayments.pay(agentId, { url, challenge: res.headers.get('payment-required') })
 *   await fetch(url, { headers: { [p.header]: p.value } })
 */
export function createAgentPayments(deps: AgentPaymentsDeps) {
  const ctx = createContext(deps)
  return {
    authenticate: (bearer: string) => ctx.auth.authenticate(bearer),
    /** human approval of held payments: the owner's decisions and the agent's polling (services/approvals) */
    approvals: ctx.approvals,
    sweep: ctx.sweep,
    /** Stops LISTENing and forgets cached look-ups and decrypted keys. */
    async close(): Promise<void> {
      await ctx.auth.close()
      await ctx.seenChallenges.close()
      ctx.keys.clear()
    },
    /** A sign-in-with-x proof from the agent wallet instead of a payment (ops/sign-in.ts). */
    signIn: (who: string | AgentRow, body: PayBody) => signIn(ctx, who, body),
    /** Signs a payment for the challenge, or (dry_run) says what would be paid and the headroom (ops/pay.ts). */
    pay: (who: string | AgentRow, body: PayBody) => pay(ctx, who, body),
    /** The agent reports what the seller answered (ops/outcome.ts). */
    outcome: (agentId: string, id: string, body: { status?: unknown; payment_response?: unknown }) =>
      outcome(ctx, agentId, id, body),
    /** What the agent may still spend: caps, spent, headroom, balance, unsettled (ops/status.ts). */
    status: (agent: AgentRow) => agentStatus(ctx, agent),
    /** The agent wallet's batch-settlement channels: deposited, balance, charged, claimed, refundable, withdrawing. */
    async channels(agent: AgentRow) {
      return { object: 'list' as const, data: await ctx.channels.list(agent.id) }
    },
    /** The agent wallet's escrow accounts (deferred): balance, thawing, outstanding vouchers per seller. */
    async escrow(agent: AgentRow) {
      if (!ctx.escrows) throw noEscrow()
      return ctx.escrows.overview(agent.address)
    },
    /** Withdraws what finished thawing in the escrow account with `seller` (ops/escrow.ts). */
    flushEscrow: (agent: AgentRow, body: { seller?: unknown }) => flushEscrow(ctx, agent, body),
    /** Deposits from the agent wallet into its escrow account with `seller` (ops/escrow.ts). */
    depositEscrow: (agent: AgentRow, body: { seller?: unknown; amount?: unknown }) => depositEscrow(ctx, agent, body),
    get: (agentId: string, id: string) => getPayment(ctx, agentId, id),
  }
}

export type AgentPaymentsService = ReturnType<typeof createAgentPayments>

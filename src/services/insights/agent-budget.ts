/**
 * An agent's budget read with its owner's credential (GET /v1/agents/{address}/budget, `tollgate
 * budget`): what GET /v1/agent answers the agent key, plus what may be withdrawn now; and the look-up
 * of the user's own agent those routes share (404 for another user's, or a malformed address).
 */
import { sql, type Kysely } from 'kysely'
import type { Database } from '../../db/database.js'
import { appError } from '../../errors.js'
import type { AgentRow, createAgentPayments } from '../agent-payments/agent-payments.js'
import { address as parseAddress } from '../accounts/validate.js'
import { unsettledFromLedger } from '../withdrawals/wallet-reservation.js'

type AgentPayments = Pick<ReturnType<typeof createAgentPayments>, 'status'>

/** The user's agent at `raw` (404 for another user's, or a malformed address). */
export async function ownAgent(db: Kysely<Database>, userId: string, raw: string): Promise<AgentRow> {
  let address: string
  try {
    address = parseAddress('address', raw)
  } catch {
    throw appError('not_found', { what: 'agent' })
  }
  const agent = await db
    .selectFrom('agents as a')
    .select([
      'a.id',
      'a.user_id',
      'a.address',
      'a.encrypted_key',
      'a.cap_per_transaction',
      'a.cap_daily',
      'a.cap_monthly',
    ])
    .select(
      sql<
        AgentRow['allowlist']
      >`coalesce((select json_agg(json_build_object('kind', l.kind, 'value', l.value)) from agent_allowlist l where l.agent_id = a.id), '[]'::json)`.as(
        'allowlist',
      ),
    )
    .where('a.user_id', '=', userId)
    .where('a.address', '=', address)
    .executeTakeFirst()
  if (!agent) throw appError('not_found', { what: 'agent' })
  return agent as AgentRow
}

/** The agent's status with `unsettled` as the larger count and `withdrawable` (null while the balance is unknown). */
export async function agentBudget(db: Kysely<Database>, agentPayments: AgentPayments, agent: AgentRow) {
  const status = await agentPayments.status(agent)
  // what may leave now: the balance less everything signed and not settled, whichever count is larger
  // (the platform's own counters, or Postgres, which also knows payments signed with the wallet's key elsewhere)
  const ledger = await unsettledFromLedger(db, agent.address, Math.floor(Date.now() / 1000))
  const unsettled = ledger > BigInt(status.unsettled) ? ledger : BigInt(status.unsettled)
  const withdrawable =
    status.balance === null
      ? null
      : (BigInt(status.balance) > unsettled ? BigInt(status.balance) - unsettled : 0n).toString()
  return { ...status, object: 'agent_budget', unsettled: unsettled.toString(), withdrawable }
}

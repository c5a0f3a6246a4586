/**
 * One payment id for a person (issue 37): the ledger's (`payments.id`, what `tollgate payments list`
 * and the dashboard show) names the same payment as the agent's own record (`agent_payments.id`,
 * what a payment answer and fetch's receipt give), and both are taken wherever an agent's payment
 * is looked up. The ledger row is matched to the agent's record by payer and nonce, as the
 * settlement of an agent payment is found.
 */
import { sql, type Kysely } from 'kysely'
import type { Database } from '../../db/database.js'
import { isUuid } from './key-rows.js'

/** The agent-payment id `id` stands for: `id` itself, or the agent's record behind that ledger payment. */
export async function agentPaymentIdOf(
  db: Kysely<Database>,
  agent: { id: string; address: string },
  id: string,
): Promise<string> {
  if (!isUuid(id)) return id
  const own = await db
    .selectFrom('agent_payments')
    .select('id')
    .where('id', '=', id)
    .where('agent_id', '=', agent.id)
    .executeTakeFirst()
  if (own) return id
  const viaLedger = await db
    .selectFrom('payments as p')
    .innerJoin('agent_payments as ap', (j) =>
      j.onRef('ap.payer', '=', 'p.payer').on(sql`lower(ap.nonce)`, '=', sql.ref('p.nonce')),
    )
    .select('ap.id')
    .where('p.id', '=', id)
    .where('ap.agent_id', '=', agent.id)
    .executeTakeFirst()
  return viaLedger?.id ?? id
}

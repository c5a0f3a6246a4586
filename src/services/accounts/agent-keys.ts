import type { Kysely } from 'kysely'
import type { Deployment } from '../../config.js'
import type { Database } from '../../db/database.js'
import { findKey, KEY_COLUMNS as COLUMNS, keyFields, revokeKey, type KeyFields, type KeyRow } from './key-rows.js'
import { KEY_PREFIXES, refuseForeignKey } from './key-kinds.js'
import { newSecret } from '../../secrets/secret-token.js'

export const AGENT_KEY_PREFIXES: Record<Deployment, string> = KEY_PREFIXES.agent_key

export interface AgentKeyView extends KeyFields {
  object: 'agent_key'
  /** the agent's address */
  agent: string
}

function view(agent: string, r: KeyRow): AgentKeyView {
  const { id, ...rest } = keyFields(r)
  return { object: 'agent_key', id, agent, ...rest }
}

/** Agent keys: bearer secrets for agent-scoped actions. The caller has already resolved the agent for its user. */
export function createAgentKeys({ db, deployment }: { db: Kysely<Database>; deployment: Deployment }) {
  const prefix = AGENT_KEY_PREFIXES[deployment]
  return {
    async create(agent: { id: string; address: string }, name: string): Promise<AgentKeyView & { secret: string }> {
      const s = newSecret(prefix)
      const row = await db
        .insertInto('agent_keys')
        .values({ agent_id: agent.id, name, prefix: s.prefix, last4: s.last4, secret_hash: s.hash })
        .returning(COLUMNS)
        .executeTakeFirstOrThrow()
      return { ...view(agent.address, row), secret: s.secret }
    },

    async list(agent: { id: string; address: string }): Promise<AgentKeyView[]> {
      const rows = await db
        .selectFrom('agent_keys')
        .select(COLUMNS)
        .where('agent_id', '=', agent.id)
        .orderBy('created_at', 'desc')
        .orderBy('id')
        .execute()
      return rows.map((r) => view(agent.address, r))
    },

    async revoke(agent: { id: string; address: string }, id: string): Promise<AgentKeyView> {
      return view(agent.address, await revokeKey(db, 'agent_keys', ['agent_id', agent.id], id, 'agent key'))
    },

    /** Agent bearer → the agent it acts for (per-request look-up; a revoke is immediate). */
    async authenticate(bearer: string): Promise<{ agentId: string; address: string; userId: string }> {
      refuseForeignKey('agent_key', deployment, bearer)
      const row = await findKey(
        db,
        'agent_keys',
        bearer,
        prefix,
        (hash) =>
          db
            .selectFrom('agent_keys as k')
            .innerJoin('agents as a', 'a.id', 'k.agent_id')
            .select(['k.id', 'k.secret_hash', 'k.revoked_at', 'a.id as agent_id', 'a.address', 'a.user_id'])
            .where('k.secret_hash', '=', hash)
            .executeTakeFirst(),
        undefined,
        'revoked_agent_key',
      )
      return { agentId: row.agent_id, address: row.address, userId: row.user_id }
    },
  }
}

export type AgentKeysService = ReturnType<typeof createAgentKeys>

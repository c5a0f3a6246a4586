import { sql, type Kysely } from 'kysely'
import type { Deployment } from '../../config.js'
import type { Database } from '../../db/database.js'
import { appError } from '../../errors.js'
import { isUuid } from './api-keys.js'
import { digestsEqual, hashSecret, isWellFormed, newSecret } from './secret-token.js'

export const AGENT_KEY_PREFIXES: Record<Deployment, string> = { production: 'ak_live_', sandbox: 'ak_test_' }

export interface AgentKeyView {
  object: 'agent_key'
  id: string
  agent: string
  name: string
  prefix: string
  last4: string
  created_at: string
  last_used_at: string | null
  revoked_at: string | null
}

const COLUMNS = ['id', 'name', 'prefix', 'last4', 'created_at', 'last_used_at', 'revoked_at'] as const
type Row = { id: string; name: string; prefix: string; last4: string; created_at: Date; last_used_at: Date | null; revoked_at: Date | null }

function view(agent: string, r: Row): AgentKeyView {
  return {
    object: 'agent_key',
    id: r.id,
    agent,
    name: r.name,
    prefix: r.prefix,
    last4: r.last4,
    created_at: r.created_at.toISOString(),
    last_used_at: r.last_used_at?.toISOString() ?? null,
    revoked_at: r.revoked_at?.toISOString() ?? null,
  }
}

/** Agent keys: bearer secrets for agent-scoped actions. The caller has already resolved the agent for its user. */
export function agentKeysService({ db, deployment }: { db: Kysely<Database>; deployment: Deployment }) {
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
      const rows = await db.selectFrom('agent_keys').select(COLUMNS).where('agent_id', '=', agent.id).orderBy('created_at', 'desc').orderBy('id').execute()
      return rows.map((r) => view(agent.address, r))
    },

    async revoke(agent: { id: string; address: string }, id: string): Promise<AgentKeyView> {
      if (!isUuid(id)) throw appError('not_found', { what: 'agent key' })
      const row =
        (await db
          .updateTable('agent_keys')
          .set({ revoked_at: new Date() })
          .where('id', '=', id)
          .where('agent_id', '=', agent.id)
          .where('revoked_at', 'is', null)
          .returning(COLUMNS)
          .executeTakeFirst()) ?? (await db.selectFrom('agent_keys').select(COLUMNS).where('id', '=', id).where('agent_id', '=', agent.id).executeTakeFirst())
      if (!row) throw appError('not_found', { what: 'agent key' })
      return view(agent.address, row)
    },

    /** Agent bearer → the agent it acts for (per-request look-up; a revoke is immediate). */
    async authenticate(bearer: string): Promise<{ agentId: string; address: string; userId: string }> {
      if (!isWellFormed(bearer, prefix)) throw appError('invalid_api_key')
      const hash = hashSecret(bearer)
      const row = await db
        .selectFrom('agent_keys as k')
        .innerJoin('agents as a', 'a.id', 'k.agent_id')
        .select(['k.id', 'k.secret_hash', 'k.revoked_at', 'a.id as agent_id', 'a.address', 'a.user_id'])
        .where('k.secret_hash', '=', hash)
        .executeTakeFirst()
      if (!row || !digestsEqual(row.secret_hash, hash) || row.revoked_at !== null) throw appError('invalid_api_key')
      void db
        .updateTable('agent_keys')
        .set({ last_used_at: sql`now()` })
        .where('id', '=', row.id)
        .where((eb) => eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<', sql<Date>`now() - interval '1 minute'`)]))
        .execute()
        .catch(() => {})
      return { agentId: row.agent_id, address: row.address, userId: row.user_id }
    },
  }
}

export type AgentKeysService = ReturnType<typeof agentKeysService>

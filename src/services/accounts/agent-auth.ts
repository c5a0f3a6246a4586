import { sql, type Kysely } from 'kysely'
import type { Config } from '../../config.js'
import type { Database } from '../../db/database.js'
import { appError } from '../../errors.js'
import { createAuthCache, type AuthCache } from './agent-auth-cache.js'
import { AGENT_KEY_PREFIXES } from './agent-keys.js'
import { refuseForeignKey } from './key-kinds.js'
import { digestsEqual, hashSecret, isWellFormed } from '../../secrets/secret-token.js'

/** An agent as agent-scoped actions need it: its wallet, its caps and its allowlist. */
export interface AgentRow {
  id: string
  user_id: string
  address: string
  encrypted_key: string
  cap_per_transaction: string | null
  cap_daily: string | null
  cap_monthly: string | null
  /** batch-settlement: the most deposited into a channel at a time (atomic USDC); null/absent = 100 x the price */
  cap_channel_deposit?: string | null
  /** approval policy (issue 38; services/approvals): above this amount a payment waits for the owner */
  approval_above?: string | null
  /** approval policy: more calls a minute than this to a seller first paid under a day ago wait */
  approval_new_seller_per_minute?: number | null
  allowlist: Array<{ kind: 'pay_to' | 'namespace' | 'host'; value: string }>
}

type KeyRow = AgentRow & { key_id: string; revoked_at: Date | null; secret_hash: string }

export interface AgentAuthDeps {
  db: Kysely<Database>
  config: Pick<Readonly<Config>, 'deployment' | 'databaseUrl'>
  /** cache look-ups while LISTENing for key/agent/allowlist changes (default true) */
  cacheAuth?: boolean
  onError?(err: unknown): void
}

/**
 * Agent keys → agents, for the agent routes (/v1/agent/…): one query for the agent with its caps
 * and allowlist. Look-ups are cached while LISTENing for key, agent and allowlist changes
 * (auth-cache.ts), so a revoke still reaches every process at commit; concurrent requests with the
 * same key share one look-up.
 */
export class AgentAuth {
  readonly #db: Kysely<Database>
  readonly #deployment: Readonly<Config>['deployment']
  readonly #prefix: string
  readonly #inflight = new Map<string, Promise<KeyRow | undefined>>()
  readonly #cache: AuthCache<KeyRow> | undefined
  /** when each key's last_used_at was last written (at most once a minute per key) */
  readonly #touched = new Map<string, number>()

  constructor(deps: AgentAuthDeps) {
    this.#db = deps.db
    this.#deployment = deps.config.deployment
    this.#prefix = AGENT_KEY_PREFIXES[deps.config.deployment]
    this.#cache =
      deps.cacheAuth === false
        ? undefined
        : createAuthCache<KeyRow>({ databaseUrl: deps.config.databaseUrl, onError: deps.onError })
  }

  #agentQuery() {
    return this.#db
      .selectFrom('agents as a')
      .select([
        'a.id',
        'a.user_id',
        'a.address',
        'a.encrypted_key',
        'a.cap_per_transaction',
        'a.cap_daily',
        'a.cap_monthly',
        'a.cap_channel_deposit',
        'a.approval_above',
        'a.approval_new_seller_per_minute',
      ])
      .select(
        sql<
          AgentRow['allowlist']
        >`coalesce((select json_agg(json_build_object('kind', l.kind, 'value', l.value)) from agent_allowlist l where l.agent_id = a.id), '[]'::json)`.as(
          'allowlist',
        ),
      )
  }

  /** The agent by id, with caps and allowlist; 404 when there is none. */
  async load(agentId: string): Promise<AgentRow> {
    const row = await this.#agentQuery().where('a.id', '=', agentId).executeTakeFirst()
    if (!row) throw appError('not_found', { what: 'agent' })
    return row
  }

  /**
   * Agent bearer → the agent. A key of the other deployment is 401 `wrong_deployment_key`, as for
   * API keys, an API key 401 `wrong_key_type`, a revoked key 401 `revoked_agent_key`; anything
   * else not ours is 401 `invalid_api_key`.
   */
  async authenticate(bearer: string): Promise<AgentRow> {
    refuseForeignKey('agent_key', this.#deployment, bearer)
    if (!isWellFormed(bearer, this.#prefix)) throw appError('invalid_api_key')
    const hash = hashSecret(bearer)
    const load = () => {
      let p = this.#inflight.get(hash)
      if (!p) {
        p = this.#agentQuery()
          .innerJoin('agent_keys as k', 'k.agent_id', 'a.id')
          .select(['k.id as key_id', 'k.revoked_at', 'k.secret_hash'])
          .where('k.secret_hash', '=', hash)
          .executeTakeFirst()
          .finally(() => this.#inflight.delete(hash))
        this.#inflight.set(hash, p)
      }
      return p
    }
    const row = this.#cache ? await this.#cache.get(hash, load) : await load()
    if (!row || !digestsEqual(row.secret_hash, hash)) throw appError('invalid_api_key')
    // only the key's holder gets this far (the whole secret matched): say what happened to it
    if (row.revoked_at !== null) throw appError('revoked_agent_key')
    const last = this.#touched.get(row.key_id) ?? 0
    if (Date.now() - last > 60_000) {
      this.#touched.set(row.key_id, Date.now())
      void this.#db
        .updateTable('agent_keys')
        .set({ last_used_at: sql`now()` })
        .where('id', '=', row.key_id)
        .execute()
        .catch(() => {})
    }
    const { key_id: _k, revoked_at: _r, secret_hash: _s, ...agent } = row
    return agent
  }

  /** Stops LISTENing and forgets cached look-ups. */
  async close(): Promise<void> {
    await this.#cache?.close()
  }
}

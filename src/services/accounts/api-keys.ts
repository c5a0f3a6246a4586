import { sql, type Kysely } from 'kysely'
import type { Deployment } from '../../config.js'
import type { Database } from '../../db/database.js'
import { appError } from '../../errors.js'
import { digestsEqual, hashSecret, isWellFormed, newSecret } from './secret-token.js'

export const API_KEY_PREFIXES: Record<Deployment, 'sk_live_' | 'sk_test_'> = { production: 'sk_live_', sandbox: 'sk_test_' }

export interface ApiKeyView {
  object: 'api_key'
  id: string
  name: string
  /** first characters of the secret, e.g. "sk_test_4fQz" */
  prefix: string
  last4: string
  created_at: string
  last_used_at: string | null
  revoked_at: string | null
}

export interface ApiKeyPrincipal {
  userId: string
  keyId: string
}

type Row = { id: string; name: string; prefix: string; last4: string; created_at: Date; last_used_at: Date | null; revoked_at: Date | null }

function view(r: Row): ApiKeyView {
  return {
    object: 'api_key',
    id: r.id,
    name: r.name,
    prefix: r.prefix,
    last4: r.last4,
    created_at: r.created_at.toISOString(),
    last_used_at: r.last_used_at?.toISOString() ?? null,
    revoked_at: r.revoked_at?.toISOString() ?? null,
  }
}

const COLUMNS = ['id', 'name', 'prefix', 'last4', 'created_at', 'last_used_at', 'revoked_at'] as const

/** User-level API keys: secret shown once, SHA-256 stored, looked up per request (no cache to outlive a revoke). */
export function apiKeysService({ db, deployment }: { db: Kysely<Database>; deployment: Deployment }) {
  const prefix = API_KEY_PREFIXES[deployment]
  return {
    prefix,
    async create(userId: string, name: string): Promise<ApiKeyView & { secret: string }> {
      const s = newSecret(prefix)
      const row = await db
        .insertInto('api_keys')
        .values({ user_id: userId, name, deployment, prefix: s.prefix, last4: s.last4, secret_hash: s.hash })
        .returning(COLUMNS)
        .executeTakeFirstOrThrow()
      return { ...view(row), secret: s.secret }
    },

    async list(userId: string): Promise<ApiKeyView[]> {
      const rows = await db.selectFrom('api_keys').select(COLUMNS).where('user_id', '=', userId).orderBy('created_at', 'desc').orderBy('id').execute()
      return rows.map(view)
    },

    /** Revokes now; idempotent. 404 for a key of another user. */
    async revoke(userId: string, id: string): Promise<ApiKeyView> {
      if (!isUuid(id)) throw appError('not_found', { what: 'API key' })
      const row =
        (await db
          .updateTable('api_keys')
          .set({ revoked_at: new Date() })
          .where('id', '=', id)
          .where('user_id', '=', userId)
          .where('revoked_at', 'is', null)
          .returning(COLUMNS)
          .executeTakeFirst()) ?? (await db.selectFrom('api_keys').select(COLUMNS).where('id', '=', id).where('user_id', '=', userId).executeTakeFirst())
      if (!row) throw appError('not_found', { what: 'API key' })
      return view(row)
    },

    /**
     * Bearer value → principal, or the 401 that fits: `wrong_deployment_key` for the other
     * deployment's prefix, `invalid_api_key` for anything malformed, unknown or revoked.
     */
    async authenticate(bearer: string): Promise<ApiKeyPrincipal> {
      const other = Object.entries(API_KEY_PREFIXES).find(([d, p]) => d !== deployment && bearer.startsWith(p))
      if (other) throw appError('wrong_deployment_key', { keyDeployment: other[0], deployment })
      if (!isWellFormed(bearer, prefix)) throw appError('invalid_api_key')
      const hash = hashSecret(bearer)
      const row = await db
        .selectFrom('api_keys')
        .select(['id', 'user_id', 'secret_hash', 'revoked_at', 'deployment'])
        .where('secret_hash', '=', hash)
        .executeTakeFirst()
      // The index look-up matched on the hash already; comparing again in constant time keeps
      // the decision itself free of early-exit timing.
      if (!row || !digestsEqual(row.secret_hash, hash) || row.revoked_at !== null || row.deployment !== deployment) throw appError('invalid_api_key')
      // last_used_at at minute granularity: one write per key per minute, off the request path.
      void db
        .updateTable('api_keys')
        .set({ last_used_at: sql`now()` })
        .where('id', '=', row.id)
        .where((eb) => eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<', sql<Date>`now() - interval '1 minute'`)]))
        .execute()
        .catch(() => {})
      return { userId: row.user_id, keyId: row.id }
    },
  }
}

export type ApiKeysService = ReturnType<typeof apiKeysService>

export function isUuid(s: string): boolean {
  return /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(s)
}

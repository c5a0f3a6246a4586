import type { Kysely } from 'kysely'
import type { Deployment } from '../../config.js'
import type { Database } from '../../db/database.js'
import { AppError } from '../../errors.js'
import { findKey, KEY_COLUMNS as COLUMNS, keyFields, revokeKey, type KeyFields, type KeyRow } from './key-rows.js'
import { KEY_PREFIXES, refuseForeignKey } from './key-kinds.js'
import { hashSecret, isWellFormed, newSecret } from '../../secrets/secret-token.js'

export { isUuid } from './key-rows.js'

export const API_KEY_PREFIXES: Record<Deployment, 'sk_live_' | 'sk_test_'> = KEY_PREFIXES.api_key

/** The name of the key `npm start` makes for the demo user (demo-account.ts); each start revokes the previous one. */
export const DEMO_API_KEY_NAME = 'demo (npm start)'

export interface ApiKeyView extends KeyFields {
  object: 'api_key'
}

export interface ApiKeyPrincipal {
  userId: string
  keyId: string
}

function view(r: KeyRow): ApiKeyView {
  return { object: 'api_key', ...keyFields(r) }
}

/** User-level API keys: secret shown once, SHA-256 stored, looked up per request (no cache to outlive a revoke). */
export function createApiKeys({ db, deployment }: { db: Kysely<Database>; deployment: Deployment }) {
  const prefix = API_KEY_PREFIXES[deployment]
  /**
   * A demo key that `npm start` revoked when it started again: the user kept the key of an earlier
   * start. Its 401 says so (still `invalid_api_key`), rather than "malformed, unknown or revoked".
   */
  async function revokedDemoKey(bearer: string): Promise<AppError | undefined> {
    if (deployment !== 'sandbox' || !isWellFormed(bearer, prefix)) return undefined
    const row = await db
      .selectFrom('api_keys')
      .select(['name', 'revoked_at'])
      .where('secret_hash', '=', hashSecret(bearer))
      .executeTakeFirst()
    if (row?.name !== DEMO_API_KEY_NAME || row.revoked_at === null) return undefined
    return new AppError(
      'invalid_api_key',
      401,
      'this demo API key was revoked by a restart: npm start makes a new demo key on every start and revokes the previous one; use apiKey from .tollgate/dev.json',
    )
  }

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
      const rows = await db
        .selectFrom('api_keys')
        .select(COLUMNS)
        .where('user_id', '=', userId)
        .orderBy('created_at', 'desc')
        .orderBy('id')
        .execute()
      return rows.map(view)
    },

    /** Revokes now; idempotent. 404 for a key of another user. */
    async revoke(userId: string, id: string): Promise<ApiKeyView> {
      return view(await revokeKey(db, 'api_keys', ['user_id', userId], id, 'API key'))
    },

    /**
     * Bearer value → principal, or the 401 that fits: `wrong_deployment_key` for the other
     * deployment's prefix, `wrong_key_type` for an agent key, `invalid_api_key` for anything
     * malformed, unknown or revoked.
     */
    async authenticate(bearer: string): Promise<ApiKeyPrincipal> {
      refuseForeignKey('api_key', deployment, bearer)
      const row = await findKey(
        db,
        'api_keys',
        bearer,
        prefix,
        (hash) =>
          db
            .selectFrom('api_keys')
            .select(['id', 'user_id', 'secret_hash', 'revoked_at', 'deployment', 'name'])
            .where('secret_hash', '=', hash)
            .executeTakeFirst(),
        (r) => r.deployment === deployment,
      ).catch(async (err) => {
        throw (await revokedDemoKey(bearer)) ?? err
      })
      return { userId: row.user_id, keyId: row.id }
    },
  }
}

export type ApiKeysService = ReturnType<typeof createApiKeys>

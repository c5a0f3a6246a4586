import { sql, type Kysely } from 'kysely'
import type { Database } from '../../db/database.js'
import { appError } from '../../errors.js'
import { digestsEqual, hashSecret, isWellFormed } from '../../secrets/secret-token.js'

/**
 * What API keys (api_keys, per user) and agent keys (agent_keys, per agent) share: the columns a
 * key is shown with, revoking, and the per-request look-up of a bearer secret by its hash.
 */
export type KeyTable = 'api_keys' | 'agent_keys'

export const KEY_COLUMNS = ['id', 'name', 'prefix', 'last4', 'created_at', 'last_used_at', 'revoked_at'] as const
export type KeyRow = {
  id: string
  name: string
  prefix: string
  last4: string
  created_at: Date
  last_used_at: Date | null
  revoked_at: Date | null
}

/** The fields both key views show, timestamps as ISO 8601. */
export interface KeyFields {
  id: string
  name: string
  /** first characters of the secret, e.g. "sk_test_4fQz" */
  prefix: string
  last4: string
  created_at: string
  last_used_at: string | null
  revoked_at: string | null
}

export function keyFields(r: KeyRow): KeyFields {
  return {
    id: r.id,
    name: r.name,
    prefix: r.prefix,
    last4: r.last4,
    created_at: r.created_at.toISOString(),
    last_used_at: r.last_used_at?.toISOString() ?? null,
    revoked_at: r.revoked_at?.toISOString() ?? null,
  }
}

/** Which rows of the table are the caller's: [column, id], e.g. ['user_id', userId]. */
export type KeyOwner = readonly ['user_id' | 'agent_id', string]

/** Revokes the owner's key now; idempotent (an already revoked key is returned as it is). 404 naming `what` otherwise. */
export async function revokeKey(
  db: Kysely<Database>,
  table: KeyTable,
  [column, owner]: KeyOwner,
  id: string,
  what: string,
): Promise<KeyRow> {
  if (!isUuid(id)) throw appError('not_found', { what })
  const t = sql.table(table)
  const own = sql.ref(column)
  const revoked =
    await sql<KeyRow>`update ${t} set revoked_at = ${new Date()} where id = ${id} and ${own} = ${owner} and revoked_at is null returning ${sql.join(KEY_COLUMNS.map((c) => sql.ref(c)))}`.execute(
      db,
    )
  const row =
    revoked.rows[0] ??
    (
      await sql<KeyRow>`select ${sql.join(KEY_COLUMNS.map((c) => sql.ref(c)))} from ${t} where id = ${id} and ${own} = ${owner}`.execute(
        db,
      )
    ).rows[0]
  if (!row) throw appError('not_found', { what })
  return row
}

/**
 * The stored row of a bearer secret, or the `invalid_api_key` 401 for anything malformed, unknown
 * or revoked (`revokedCode` for a revoked one: agent keys say `revoked_agent_key`). `find` reads the row by its secret_hash (index look-up); `isUsable` adds the caller's
 * own conditions. last_used_at is touched at minute granularity, off the request path.
 */
export async function findKey<R extends { id: string; secret_hash: string; revoked_at: Date | null }>(
  db: Kysely<Database>,
  table: KeyTable,
  bearer: string,
  prefix: string,
  find: (hash: string) => Promise<R | undefined>,
  isUsable: (row: R) => boolean = () => true,
  /** the code for a key that was revoked (only its holder can tell: the whole secret matched) */
  revokedCode: 'invalid_api_key' | 'revoked_agent_key' = 'invalid_api_key',
): Promise<R> {
  if (!isWellFormed(bearer, prefix)) throw appError('invalid_api_key')
  const hash = hashSecret(bearer)
  const row = await find(hash)
  // The index look-up matched on the hash already; comparing again in constant time keeps
  // the decision itself free of early-exit timing.
  if (!row || !digestsEqual(row.secret_hash, hash) || !isUsable(row)) throw appError('invalid_api_key')
  if (row.revoked_at !== null) throw appError(revokedCode)
  // one write per key per minute at most
  void sql`update ${sql.table(table)} set last_used_at = now() where id = ${row.id} and (last_used_at is null or last_used_at < now() - interval '1 minute')`
    .execute(db)
    .catch(() => {})
  return row
}

export function isUuid(s: string): boolean {
  return /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(s)
}

import { sql } from 'kysely'
import type { Deps } from '../../src/deps.js'

/**
 * Ends `payer`'s access grants now, as time would: in Postgres, and in the Redis copy the proxy
 * reads (which, in production, ends by its own expiry at the grant's end).
 */
export async function endAccessGrants(deps: Pick<Deps, 'db' | 'redis' | 'key'>, payer: string): Promise<void> {
  const ended = await deps.db
    .updateTable('access_grants')
    .set({ expires_at: sql`now() - interval '1 second'` })
    .where('payer', '=', payer.toLowerCase())
    .returning('scope_id')
    .execute()
  for (const g of ended) await deps.redis.del(deps.key('siwx-grant', g.scope_id, payer.toLowerCase()))
}

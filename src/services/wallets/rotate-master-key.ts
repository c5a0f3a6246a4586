import type { Kysely } from 'kysely'
import type { Database } from '../../db/database.js'
import { rotateUpstreamSecrets } from '../publishing/upstream-config.js'
import { walletAad } from './custodial-wallet.js'
import { masterKeyId, reencryptSecret } from './wallet-crypto.js'

/**
 * Re-encrypts every stored secret under `newKey`. Safe to re-run (rows already under the new key
 * are skipped) and to run while serving, as long as processes hold both keys until it finishes.
 * Returns how many rows it rewrote.
 */
export async function rotateMasterKey(db: Kysely<Database>, oldKeys: readonly Buffer[], newKey: Buffer): Promise<number> {
  const newId = masterKeyId(newKey)
  let n = 0
  for (const table of ['agents', 'funding_wallets'] as const) {
    const kind = table === 'agents' ? 'agent' : 'funding'
    const rows = await db.selectFrom(table).select(['address', 'encrypted_key']).where('encrypted_key', 'not like', `v1.${newId}.%`).execute()
    for (const r of rows) {
      const next = reencryptSecret(oldKeys, newKey, r.encrypted_key, walletAad(kind, r.address))
      await db.updateTable(table).set({ encrypted_key: next }).where('address', '=', r.address).where('encrypted_key', '=', r.encrypted_key).execute()
      n++
    }
  }
  const endpoints = await db.selectFrom('endpoints').select(['id', 'upstream_config']).where('upstream_config', 'is not', null).execute()
  for (const e of endpoints) {
    const next = rotateUpstreamSecrets(e.upstream_config, e.id, oldKeys, newKey)
    if (next) {
      await db.updateTable('endpoints').set({ upstream_config: JSON.stringify(next) }).where('id', '=', e.id).execute()
      n++
    }
  }
  return n
}

import type { Kysely } from 'kysely'
import type { Database } from '../../db/database.js'
import { createCustodialWallet } from './custodial-wallet.js'

/** The user's funding wallet (source of agent top-ups), created on first use; race-safe. */
export async function ensureFundingWallet(
  db: Kysely<Database>,
  masterKey: Buffer,
  userId: string,
): Promise<{ address: string; created_at: Date }> {
  const existing = await db
    .selectFrom('funding_wallets')
    .select(['address', 'created_at'])
    .where('user_id', '=', userId)
    .executeTakeFirst()
  if (existing) return existing
  const w = createCustodialWallet(masterKey, 'funding')
  await db
    .insertInto('funding_wallets')
    .values({ user_id: userId, address: w.address, encrypted_key: w.encryptedKey })
    .onConflict((oc) => oc.column('user_id').doNothing())
    .execute()
  return db
    .selectFrom('funding_wallets')
    .select(['address', 'created_at'])
    .where('user_id', '=', userId)
    .executeTakeFirstOrThrow()
}

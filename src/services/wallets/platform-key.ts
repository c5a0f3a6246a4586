import type { Kysely } from 'kysely'
import type { LocalAccount } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import type { Database } from '../../db/database.js'
import { decryptSecret, encryptSecret } from '../../secrets/wallet-crypto.js'

/** What a platform key is for; one key per purpose (table `platform_keys`). */
export type PlatformKeyPurpose = 'batch-receiver-authorizer'

/** What binds a platform key's ciphertext to its row (purpose and address). */
export function platformKeyAad(purpose: string, address: string): string {
  return `platform-key:${purpose}:${address.toLowerCase()}`
}

/**
 * The platform's key for `purpose` (e.g. the batch-settlement receiverAuthorizer): created on first
 * use and stored encrypted under the master key, as custodial wallet keys are; the same key for
 * every process afterwards (a concurrent first use keeps the row that was inserted first). The
 * private key leaves this function only inside the returned signer: never log or serialise it.
 *
 * @example
 *   const { address, signer } = await ensurePlatformKey(db, masterKey, 'batch-receiver-authorizer')
 */
export async function ensurePlatformKey(
  db: Kysely<Database>,
  masterKey: Buffer,
  purpose: PlatformKeyPurpose,
): Promise<{ address: `0x${string}`; signer: LocalAccount }> {
  let row = await db.selectFrom('platform_keys').selectAll().where('purpose', '=', purpose).executeTakeFirst()
  if (!row) {
    const privateKey = generatePrivateKey()
    const address = privateKeyToAccount(privateKey).address.toLowerCase()
    await db
      .insertInto('platform_keys')
      .values({
        purpose,
        address,
        encrypted_key: encryptSecret(masterKey, privateKey, platformKeyAad(purpose, address)),
      })
      .onConflict((oc) => oc.column('purpose').doNothing())
      .execute()
    row = await db.selectFrom('platform_keys').selectAll().where('purpose', '=', purpose).executeTakeFirstOrThrow()
  }
  const signer = privateKeyToAccount(
    decryptSecret([masterKey], row.encrypted_key, platformKeyAad(purpose, row.address)) as `0x${string}`,
  )
  if (signer.address.toLowerCase() !== row.address)
    throw new Error(`platform key ${purpose} does not match its address`)
  return { address: signer.address, signer }
}

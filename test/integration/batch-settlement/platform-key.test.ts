/**
 * The platform's batch-settlement receiverAuthorizer key: created once, the same for every caller,
 * stored only encrypted under the master key (bound to its purpose and address), and carried over by
 * a master-key rotation.
 */
import { randomBytes } from 'node:crypto'
import t from 'tap'
import { MasterKeyUnavailableError } from '../../../src/secrets/wallet-crypto.js'
import { rotateMasterKey } from '../../../src/services/wallets/rotate-master-key.js'
import { ensurePlatformKey } from '../../../src/services/wallets/platform-key.js'
import { testDeps } from '../../helpers/test-env.js'

t.test('ensurePlatformKey', async (t) => {
  const deps = await testDeps(t)
  const key = randomBytes(32)
  const [a, b] = await Promise.all([
    ensurePlatformKey(deps.db, key, 'batch-receiver-authorizer'),
    ensurePlatformKey(deps.db, key, 'batch-receiver-authorizer'),
  ])
  t.equal(a.address, b.address, 'concurrent first uses get the same key')
  t.equal((await ensurePlatformKey(deps.db, key, 'batch-receiver-authorizer')).address, a.address, 'and later ones')
  const rows = await deps.db.selectFrom('platform_keys').selectAll().execute()
  t.equal(rows.length, 1)
  t.equal(rows[0]!.address, a.address.toLowerCase())
  t.match(rows[0]!.encrypted_key, /^v1\./, 'stored as an encrypted envelope')
  const signature = await a.signer.signMessage({ message: 'probe' })
  t.ok(signature.length === 132, 'the signer signs')

  await t.rejects(
    ensurePlatformKey(deps.db, randomBytes(32), 'batch-receiver-authorizer'),
    MasterKeyUnavailableError,
    'another master key does not open it',
  )
  // the ciphertext moved to another address does not decrypt (the AAD binds it)
  await deps.db
    .updateTable('platform_keys')
    .set({ address: '0x000000000000000000000000000000000000dead' })
    .where('purpose', '=', 'batch-receiver-authorizer')
    .execute()
  await t.rejects(ensurePlatformKey(deps.db, key, 'batch-receiver-authorizer'), 'a moved ciphertext is refused')
  await deps.db
    .updateTable('platform_keys')
    .set({ address: a.address.toLowerCase() })
    .where('purpose', '=', 'batch-receiver-authorizer')
    .execute()

  const next = randomBytes(32)
  t.match(await rotateMasterKey(deps.db, [key], next), { platform_keys: 1 }, 'rotation re-encrypts it')
  t.equal(
    (await ensurePlatformKey(deps.db, next, 'batch-receiver-authorizer')).address,
    a.address,
    'the same key under the new master key',
  )
})

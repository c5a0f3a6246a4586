import { createHmac } from 'node:crypto'
import { sql } from 'kysely'
import { getAddress } from 'viem'
import type { CoreDeps as Deps } from '../../core-deps.js'
import { walletAad } from '../wallets/custodial-wallet.js'
import { encryptSecret, requireMasterKey } from '../../secrets/wallet-crypto.js'
import { ensureFundingWallet } from '../wallets/funding-wallet.js'
import { createApiKeys, DEMO_API_KEY_NAME as DEMO_KEY_NAME } from './api-keys.js'
import { createUsers } from './users.js'

export const DEMO_EMAIL = 'demo@tollgate.local'

/**
 * `npm start`: the demo user and a fresh demo API key, idempotently. Nothing is stored in
 * plaintext: the password is derived from the master key (HMAC), so it is the same on every start
 * without being kept anywhere, and the key is new on every start (the previous demo keys are
 * revoked, so exactly one is live). Sandbox only: production gets its users from the CLI.
 */
export async function ensureDemoAccount(
  deps: Pick<Deps, 'db' | 'config'>,
): Promise<{ userId: string; email: string; password: string; apiKey: string }> {
  if (deps.config.deployment !== 'sandbox') throw new Error('the demo account exists only on the sandbox deployment')
  const masterKey = requireMasterKey(deps.config)
  const password =
    'demo-' + createHmac('sha256', masterKey).update('tollgate demo user password').digest('base64url').slice(0, 20)
  const users = createUsers({ db: deps.db })
  let user = await users.findByEmail(DEMO_EMAIL)
  if (!user) {
    await users.create(DEMO_EMAIL, password).catch((err) => {
      if ((err as { code?: string }).code !== 'conflict') throw err
    })
    user = (await users.findByEmail(DEMO_EMAIL))!
  } else {
    // a master key change (fresh .tollgate/) changes the derived password; keep them in step
    await users.setPassword(user.id, password)
  }
  await ensureFundingWallet(deps.db, masterKey, user.id)
  await deps.db
    .updateTable('api_keys')
    .set({ revoked_at: new Date() })
    .where('user_id', '=', user.id)
    .where('name', '=', DEMO_KEY_NAME)
    .where('revoked_at', 'is', null)
    .execute()
  const key = await createApiKeys({ db: deps.db, deployment: deps.config.deployment }).create(user.id, DEMO_KEY_NAME)
  return { userId: user.id, email: DEMO_EMAIL, password, apiKey: key.secret }
}

export const DEMO_PAYER_AGENT = 'demo payer'

/**
 * `npm start` on the embedded chain: the demo payer (a dev-chain account holding test USDC, whose
 * key dev.json gives for local signing) is also the demo user's agent "demo payer", so what it pays
 * shows in the demo user's transactions and dashboard, and it can pay through /v1/agent/payments
 * with an agent key. Its key is encrypted under the current master key, again on every start.
 * Returns false (and changes nothing) when another user already has an agent at that address.
 */
export async function ensureDemoPayerAgent(
  deps: Pick<Deps, 'db' | 'config'>,
  userId: string,
  payer: { address: string; privateKey: string },
): Promise<boolean> {
  if (deps.config.deployment !== 'sandbox') throw new Error('the demo payer exists only on the sandbox deployment')
  const address = getAddress(payer.address)
  const encrypted = encryptSecret(requireMasterKey(deps.config), payer.privateKey, walletAad('agent', address))
  const row = await deps.db
    .insertInto('agents')
    .values({ user_id: userId, name: DEMO_PAYER_AGENT, address, encrypted_key: encrypted })
    .onConflict((oc) =>
      oc
        .column('address')
        .doUpdateSet({ encrypted_key: encrypted, updated_at: sql`now()` })
        .where('agents.user_id', '=', userId),
    )
    .returning('id')
    .executeTakeFirst()
  return row !== undefined
}

import { randomBytes } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import { buildWebApp, type WebAppOptions } from '../../src/http/web-app.js'
import type { Deps } from '../../src/deps.js'
import { createApiKeys } from '../../src/services/accounts/api-keys.js'
import { createUsers } from '../../src/services/accounts/users.js'
import { testDeps } from './test-env.js'

export const MASTER_KEY = randomBytes(32).toString('hex')

interface T {
  teardown(fn: () => unknown): void
}

/** Deps (with a master key) and a web app that never listens. */
export async function accountsApp(
  t: T,
  env: Record<string, string | undefined> = {},
  opts: WebAppOptions = {},
): Promise<{ deps: Deps; app: FastifyInstance }> {
  const deps = await testDeps(t, { TOLLGATE_MASTER_KEY: MASTER_KEY, ...env })
  const app = await buildWebApp(deps, { logger: false, ...opts })
  t.teardown(() => app.close())
  return { deps, app }
}

/** A user with one API key; returns the bearer secret. */
export async function userWithKey(
  deps: Deps,
  email = `u${randomBytes(4).toString('hex')}@example.com`,
): Promise<{ userId: string; email: string; password: string; apiKey: string; auth: { authorization: string } }> {
  const password = 'correct horse battery'
  const user = await createUsers({ db: deps.db }).create(email, password)
  const key = await createApiKeys({ db: deps.db, deployment: deps.config.deployment }).create(user.id, 'test')
  return { userId: user.id, email, password, apiKey: key.secret, auth: { authorization: `Bearer ${key.secret}` } }
}

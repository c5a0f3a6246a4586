/**
 * Asks an API which deployment it is, before any key is sent to it. The user API refuses a key of
 * the other deployment with 401 `wrong_deployment_key` before looking anything up (docs/api.md,
 * Authentication), so a bare `sk_test_` prefix — no key at all — tells: a production API answers
 * wrong_deployment_key, a sandbox API invalid_api_key (malformed).
 */
import type { FetchLike } from '../client/wrap-fetch.js'
import type { Deployment } from './config-file.js'
import { UsageError } from './errors.js'

export async function probeDeployment(f: FetchLike, apiUrl: string): Promise<Deployment> {
  const res = await f(`${apiUrl}/v1/session`, {
    headers: { authorization: 'Bearer sk_test_', accept: 'application/json' },
  })
  const body = (await res.json().catch(() => undefined)) as { code?: unknown; message?: unknown } | undefined
  if (res.status === 401 && body?.code === 'wrong_deployment_key') return 'production'
  if (res.status === 401 && body?.code === 'invalid_api_key') return 'sandbox'
  throw new UsageError(
    `${apiUrl} does not answer as a Tollgate API (GET /v1/session: HTTP ${res.status}${typeof body?.code === 'string' ? ` ${body.code}` : ''}): check the address`,
  )
}

/**
 * Which deployment a key belongs to, by its prefix (`sk_test_` / `ak_test_` sandbox, `sk_live_` /
 * `ak_live_` production), and the check that keeps a key away from the other deployment's API.
 */
import type { Deployment } from './config-file.js'
import { UsageError } from './errors.js'

export function keyDeployment(key: string): Deployment | undefined {
  const m = /^(?:sk|ak)_(test|live)_/.exec(key)
  return m ? (m[1] === 'live' ? 'production' : 'sandbox') : undefined
}

/**
 * Refuses `key` for an API of `deployment` when its prefix names the other one: the key is never
 * sent there. `what` names the key and where it came from; the key itself is not printed.
 */
export function checkKeyDeployment(key: string, deployment: Deployment | undefined, what: string, where: string): void {
  const kd = keyDeployment(key)
  if (deployment === undefined || kd === undefined || kd === deployment) return
  throw new UsageError(
    `${what} is a ${kd} key (${key.slice(0, 8)}…) and ${where} is ${deployment}: a ${deployment} API never gets a ${kd} key`,
    `keep ${kd} keys in a ${kd} context (--context NAME, tollgate config use NAME); tollgate login and tollgate setup store ${deployment} keys in this one`,
  )
}

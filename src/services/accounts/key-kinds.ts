import type { Deployment } from '../../config.js'
import { appError } from '../../errors.js'

/** The two kinds of bearer key: a user's API key (the user API /v1) and an agent key (/v1/agent). */
export type KeyKind = 'api_key' | 'agent_key'

/** What each kind of key starts with, per deployment. The prefix is public: it is shown in key lists. */
export const KEY_PREFIXES = {
  api_key: { production: 'sk_live_', sandbox: 'sk_test_' },
  agent_key: { production: 'ak_live_', sandbox: 'ak_test_' },
} as const satisfies Record<KeyKind, Record<Deployment, string>>

// the `wrong_key_type` message for a key of each kind: what it is for, and what the routes it was sent to take
const KINDS = {
  api_key: {
    keyType: 'an API key',
    belongsTo: 'the user API /v1/… (not /v1/agent)',
    expected: (d: Deployment) =>
      `/v1/agent/… takes an agent key (${KEY_PREFIXES.agent_key[d]}…): create one on the agent's dashboard page or with POST /v1/agents/{address}/keys`,
  },
  agent_key: {
    keyType: 'an agent key',
    belongsTo: "the agent routes /v1/agent/… (paying, the agent's budget, its own endpoints)",
    expected: (d: Deployment) =>
      `the user API /v1/… takes an API key (${KEY_PREFIXES.api_key[d]}…) or the dashboard session`,
  },
} as const

/**
 * Before any look-up, refuses a bearer that carries the prefix of another deployment (401
 * `wrong_deployment_key`, either kind: it works nowhere here) or of the other kind of key on this
 * deployment (401 `wrong_key_type`, saying which routes it authenticates). Anything else goes on to
 * the look-up. Only the prefix is named, never the key.
 *
 * @example
 *   refuseForeignKey('api_key', 'sandbox', 'ak_test_…') // throws wrong_key_type: "this is an agent key (ak_test_…): …"
 */
export function refuseForeignKey(expected: KeyKind, deployment: Deployment, bearer: string): void {
  for (const kind of Object.keys(KEY_PREFIXES) as KeyKind[]) {
    for (const [d, prefix] of Object.entries(KEY_PREFIXES[kind]) as [Deployment, string][]) {
      if (!bearer.startsWith(prefix)) continue
      if (d !== deployment) throw appError('wrong_deployment_key', { keyDeployment: d, deployment })
      if (kind !== expected) {
        const k = KINDS[kind]
        throw appError(
          'wrong_key_type',
          { keyType: k.keyType, keyPrefix: prefix, belongsTo: k.belongsTo, expected: k.expected(deployment) },
          { details: { key_type: kind } },
        )
      }
    }
  }
}

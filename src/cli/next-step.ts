/**
 * What the user can do about a platform refusal, by its code: the `to fix:` line under an error.
 * `source` is where the key in question came from (TOLLGATE_AGENT_KEY, a context, ...).
 */
import type { Credential } from './errors.js'

export function nextStep(
  code: string,
  credential: Credential,
  source: string,
  details: Record<string, unknown> = {},
): string | undefined {
  const key = credential === 'agent_key' ? 'agent key' : 'API key'
  switch (code) {
    case 'invalid_api_key':
      return credential === 'agent_key'
        ? `check the agent key in ${source} (a revoked key stays refused; tollgate setup or tollgate keys create makes a new one)`
        : `check the API key in ${source} (a revoked key stays refused; tollgate login makes a new one)`
    case 'revoked_agent_key':
      return `the agent key in ${source} was revoked: tollgate keys create --agent <name> --save makes a new one and stores it`
    case 'missing_api_key':
      return credential === 'agent_key'
        ? 'run tollgate setup, or set TOLLGATE_AGENT_KEY'
        : 'run tollgate login, or set TOLLGATE_API_KEY'
    case 'wrong_deployment_key':
      return `the ${key} in ${source} is for the other deployment: …_test_ keys work with a sandbox API, …_live_ keys with production (pick the context with --context or tollgate config use)`
    case 'spend_cap_exceeded':
      return `raise the agent's ${typeof details.cap === 'string' ? `${details.cap} ` : ''}spend cap (tollgate caps set, its dashboard page, or PUT /v1/agents/{address}/spend-caps)${details.cap === 'daily' ? ' or wait for the UTC day to turn' : details.cap === 'monthly' ? ' or wait for the UTC month to turn' : ''}`
    case 'insufficient_balance':
      return "fund the agent's wallet (tollgate budget shows its address and what is available; tollgate setup tops it up on the dev chain)"
    case 'seller_not_allowed':
      return "add the seller to the agent's allowlist (tollgate allowlist add, its dashboard page, or POST /v1/agents/{address}/allowlist)"
    case 'rate_limited':
      return `wait ${typeof details.retry_after === 'string' ? `${details.retry_after} s` : 'a minute'} and try again`
    case 'route_not_found':
      return 'this API does not have that route: it is older than this CLI (upgrade the server), or the address is not the Tollgate API'
    case 'faucet_unavailable':
      return 'the faucet exists only on the dev chain (npm start); fund the wallet with USDC from elsewhere'
    default:
      return undefined
  }
}

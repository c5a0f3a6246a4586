import { PROVIDER_SETTINGS } from '../handler-providers.js'

// The platform's own settings: keys, database and Redis URLs, an RPC URL that may carry a key.
const PLATFORM =
  /^(TOLLGATE_|RELAYER_|DATABASE_|REDIS_|SETTLEMENT_|FACILITATOR_|X402_|WALLET_SCORE_|HANDLER_|HANDLERS_|RPC_URL$)/
const SECRET = /KEY|SECRET|TOKEN|PASSWORD|PASSWD|PRIVATE|CREDENTIAL/i

/**
 * The environment a handler process starts with: the parent's, without the platform's settings,
 * anything named like a secret, and the provider settings (a handler gets those it needs in
 * `ctx.providers`, per call). Handler code never needs the master key or the relayer keys, so a
 * handler that misbehaves cannot read them either.
 */
export function handlerProcessEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const providers = new Set<string>(PROVIDER_SETTINGS.map((p) => p.name))
  const out: NodeJS.ProcessEnv = {}
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined || providers.has(name) || PLATFORM.test(name) || SECRET.test(name)) continue
    out[name] = value
  }
  return out
}

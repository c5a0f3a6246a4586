/**
 * Publishing's shared state, built once by `createContext` and passed to every operation in ops/ as
 * `ctx`: the deps, the change announcer, the MCP and A2A upstream publishers, the payee check and
 * the scoped look-ups of a seller, a service and an endpoint (404 when `who` may not see them).
 */
import { privateKeyToAccount } from 'viem/accounts'
import type { Kysely } from 'kysely'
import type { Config } from '../../config.js'
import type { Database } from '../../db/database.js'
import { appError } from '../../errors.js'
import type { RedisClient } from '../../redis-client.js'
import { address, invalid } from '../accounts/validate.js'
import { announceRegistryChange } from '../registry-events.js'
import { createA2aUpstreams } from './a2a-upstream.js'
import { createMcpUpstreams } from './mcp-upstream.js'

export interface PublishingDeps {
  db: Kysely<Database>
  config: Readonly<Config>
  redis: RedisClient
  key(...parts: string[]): string
}

/**
 * Whose namespaces a call may see and change: a user's (API key or session), or, for an agent key,
 * only the namespaces linked to that agent (the agent's own endpoints; spec 4.1's agent-scoped actions).
 */
export interface SellerScope {
  userId: string
  /** set for an agent key: the agent's address (as stored, checksummed) */
  agentAddress?: string
}

export type PublishingContext = ReturnType<typeof createContext>

export function createContext(deps: PublishingDeps) {
  const { db, config } = deps
  const announce = (what: Record<string, unknown>) => announceRegistryChange(deps, what).catch(() => {})
  const sellersOf = (who: SellerScope) =>
    db
      .selectFrom('sellers')
      .where('owner_user_id', '=', who.userId)
      .$if(who.agentAddress !== undefined, (q) => q.where('agent_address', '=', who.agentAddress!))

  async function seller(who: SellerScope, namespace: string) {
    const row = await sellersOf(who).selectAll().where('namespace', '=', namespace).executeTakeFirst()
    if (!row) throw appError('not_found', { what: 'seller namespace' })
    return row
  }
  async function service(who: SellerScope, namespace: string, name: string) {
    const s = await seller(who, namespace)
    const row = await db
      .selectFrom('services')
      .selectAll()
      .where('seller_id', '=', s.id)
      .where('name', '=', name)
      .executeTakeFirst()
    if (!row) throw appError('not_found', { what: 'service' })
    return { seller: s, service: row }
  }
  async function endpoint(who: SellerScope, namespace: string, svc: string, slug: string) {
    const ctx = await service(who, namespace, svc)
    const row = await db
      .selectFrom('endpoints')
      .selectAll()
      .where('service_id', '=', ctx.service.id)
      .where('slug', '=', slug)
      .executeTakeFirst()
    if (!row) throw appError('not_found', { what: 'endpoint' })
    return { ...ctx, endpoint: row }
  }

  return {
    db,
    config,
    announce,
    mcpUpstreams: createMcpUpstreams({ db, config, announce }),
    a2aUpstreams: createA2aUpstreams({ db, config, announce }),
    payee: payeeCheck(config),
    /** the sellers `who` may see: the user's own, and for an agent key only those linked to the agent */
    sellersOf,
    seller,
    service,
    endpoint,
  }
}

/** A service's payee: a checksummed address some seller can spend from, or 400. */
function payeeCheck(config: Readonly<Config>) {
  // addresses that can never be paid out to a seller: no key holds the zero address, the token contract
  // cannot hand USDC back, and our relayers are the platform's own gas wallets
  const unpayable = new Map<string, string>([
    ['0x0000000000000000000000000000000000000000', 'the zero address, which no key holds (settlement would fail)'],
    [config.chain.usdc.address.toLowerCase(), 'the USDC token contract, which cannot hand the funds back'],
    ...config.relayerKeys.map(
      (k) =>
        [privateKeyToAccount(k).address.toLowerCase(), "one of this platform's relayers, not a seller's wallet"] as [
          string,
          string,
        ],
    ),
  ])
  return (v: unknown) => {
    const a = address('pay_to', v)
    const why = unpayable.get(a.toLowerCase())
    if (why) throw invalid('pay_to', `${a} is ${why}; name the wallet that receives the service's payments`)
    return a
  }
}

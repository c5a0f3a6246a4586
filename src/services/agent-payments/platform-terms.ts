/**
 * What this platform's own registry asks for an endpoint of its proxy, so that the platform signs
 * for an agent only a requirement it checked itself: a challenge the agent hands over for one of
 * our URLs is compared with the endpoint's service payee, price, offered schemes, USDC and network,
 * for `upto` with the relayer the proxy names as the endpoint's facilitator, and for
 * `batch-settlement` with the platform's own receiverAuthorizer key and withdrawal delay (the
 * contract and the token's EIP-712 domain are never taken from the challenge). An agent that
 * writes its own challenge (its own address as payTo, a settler of its own) is refused
 * (`requirement_mismatch`), whatever its allowlist says.
 */
import type { Kysely } from 'kysely'
import { getAddress, type Address } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import type { Requirement } from '../../client/challenge.js'
import type { Config } from '../../config.js'
import type { Database } from '../../db/database.js'
import { appError } from '../../errors.js'
import { facilitatorFor } from '../../schemes/upto/facilitator.js'
import { offeredSchemes } from '../../schemes/batch-settlement/offered.js'

/** One endpoint of this platform as the registry states it. */
export interface RegistryEndpoint {
  path: string
  resourceUrl: string
  /** lower-case */
  payTo: string
  price: bigint
  methods: ReadonlySet<string>
  schemes: ReadonlySet<string>
  /** paid access (sign-in-with-x) is offered: minutes on the endpoint or its service */
  access: boolean
}

export function createPlatformTerms(deps: {
  db: Kysely<Database>
  config: Pick<Readonly<Config>, 'proxyUrl' | 'relayerKeys' | 'upto' | 'deferredEscrowAddress' | 'batchSettlement'>
}) {
  const batchAuthorizer = platformBatchAuthorizer(deps)
  const base = new URL(deps.config.proxyUrl)
  const prefix = base.pathname.replace(/\/+$/, '')
  const facilitators: Address[] = deps.config.relayerKeys.map((k) => privateKeyToAccount(k).address)

  /** Whether `url` is on this platform's proxy (its origin and base path). */
  function isOurs(url: URL): boolean {
    return url.origin === base.origin && url.pathname.startsWith(`${prefix}/`)
  }

  /** The endpoint at `url` on this proxy, as the registry has it now (enabled service and endpoint); undefined: none. */
  async function endpointAt(url: URL): Promise<RegistryEndpoint | undefined> {
    const parts = url.pathname.slice(prefix.length).replace(/\/+$/, '').split('/').slice(1)
    if (parts.length !== 3 || parts.some((p) => p === '')) return undefined
    const [namespace, service, slug] = parts.map((p) => decodeURIComponent(p)) as [string, string, string]
    const r = await deps.db
      .selectFrom('endpoints as e')
      .innerJoin('services as s', 's.id', 'e.service_id')
      .innerJoin('sellers as sl', 'sl.id', 's.seller_id')
      .select([
        'e.methods',
        'e.price',
        'e.schemes',
        'e.access_minutes',
        's.access_minutes as service_access_minutes',
        's.pay_to',
      ])
      .where('sl.namespace', '=', namespace)
      .where('s.name', '=', service)
      .where('e.slug', '=', slug)
      .where('e.enabled', '=', true)
      .where('s.enabled', '=', true)
      .executeTakeFirst()
    if (!r) return undefined
    const path = `/${namespace}/${service}/${slug}`
    return {
      path,
      resourceUrl: `${deps.config.proxyUrl}${path}`,
      payTo: r.pay_to.toLowerCase(),
      price: BigInt(r.price),
      methods: new Set(r.methods.map((m) => m.toUpperCase())),
      schemes: new Set(offeredSchemes(namespace, r.schemes)),
      access: r.access_minutes !== null || r.service_access_minutes !== null,
    }
  }

  /** Why `req` is not what the registry asks for `e` (undefined: it is). */
  function mismatch(e: RegistryEndpoint, req: Requirement, authorizer: string | undefined): string | undefined {
    // the method is not a money term: an MCP tool call pays a GET endpoint over POST, and a method
    // the endpoint does not serve is refused by the proxy and voided, never charged
    if (req.payTo.toLowerCase() !== e.payTo)
      return `payTo ${req.payTo} is not the service's payee ${getAddress(e.payTo)}`
    if (req.amount !== e.price) return `the amount ${req.amount} is not the endpoint's price ${e.price}`
    if (!e.schemes.has(req.scheme) && req.scheme !== 'exact') return `the endpoint does not offer ${req.scheme}`
    if (req.scheme === 'upto') {
      if (!deps.config.upto.enabled || facilitators.length === 0) return 'upto is not offered on this deployment'
      const named = (req.raw.extra as { facilitatorAddress?: string } | undefined)?.facilitatorAddress ?? ''
      const ours = facilitatorFor(e.resourceUrl, facilitators)
      if (named.toLowerCase() !== ours.toLowerCase())
        return `extra.facilitatorAddress ${named} is not the endpoint's settler ${ours}`
    }
    if (req.scheme === 'batch-settlement') {
      if (!authorizer) return 'batch-settlement is not offered on this deployment'
      const extra = (req.raw.extra ?? {}) as { receiverAuthorizer?: unknown; withdrawDelay?: unknown }
      const named = typeof extra.receiverAuthorizer === 'string' ? extra.receiverAuthorizer : ''
      if (named.toLowerCase() !== authorizer)
        return `extra.receiverAuthorizer ${named} is not the platform's receiverAuthorizer ${getAddress(authorizer)}`
      if (extra.withdrawDelay !== deps.config.batchSettlement.withdrawDelay)
        return `extra.withdrawDelay ${String(extra.withdrawDelay)} is not the platform's ${deps.config.batchSettlement.withdrawDelay}`
    }
    return undefined
  }

  return {
    isOurs,
    batchAuthorizer,
    endpointAt,
    /**
     * The requirements of `payable` that equal what the registry asks for the endpoint at `url`
     * (same order), or 409 `requirement_mismatch` when none does, or 404 when there is no endpoint.
     */
    async matching(url: URL, payable: Requirement[]): Promise<Requirement[]> {
      const e = await endpointAt(url)
      if (!e) throw appError('not_found', { what: `endpoint ${url.pathname} on this platform` })
      const authorizer = payable.some((r) => r.scheme === 'batch-settlement') ? await batchAuthorizer() : undefined
      const ok = payable.filter((r) => mismatch(e, r, authorizer) === undefined)
      if (ok.length > 0) return ok
      throw appError(
        'requirement_mismatch',
        { resource: e.path, detail: mismatch(e, payable[0]!, authorizer)! },
        { details: { resource: e.resourceUrl } },
      )
    },
  }
}

/** The platform's batch-settlement receiverAuthorizer (lower-case), read once it exists; undefined where the scheme is off. */
function platformBatchAuthorizer(deps: {
  db: Kysely<Database>
  config: Pick<Readonly<Config>, 'batchSettlement'>
}): () => Promise<string | undefined> {
  let receiverAuthorizer: string | undefined
  return async () => {
    if (receiverAuthorizer || !deps.config.batchSettlement.enabled) return receiverAuthorizer
    const row = await deps.db
      .selectFrom('platform_keys')
      .select('address')
      .where('purpose', '=', 'batch-receiver-authorizer')
      .executeTakeFirst()
    receiverAuthorizer = row?.address.toLowerCase()
    return receiverAuthorizer
  }
}

/** Where an endpoint's calls go: a hosted handler or an upstream origin (with its stored settings). */
import type { Selectable } from 'kysely'
import type { Config } from '../../config.js'
import type { EndpointsTable } from '../../db/database.js'
import { checkUpstreamUrl } from '../../net/ssrf-guard.js'
import { listHandlerSlugs } from '../../pool/handler-registry.js'
import { newSecret } from '../../secrets/secret-token.js'
import { requireMasterKey } from '../../secrets/wallet-crypto.js'
import { invalid } from '../accounts/validate.js'
import { buildUpstreamConfig, type StoredUpstreamConfig, type UpstreamInput } from './upstream-config.js'

/** Handler names follow hosted endpoint slugs (handlers/<slug>/). */
const HANDLER = /^[a-z0-9][a-z0-9-]{0,62}$/
// the hosted handlers this deployment ships (folder names only; nothing is imported)
let knownHandlers: Set<string> | undefined

export interface EndpointBody {
  slug?: unknown
  methods?: unknown
  price?: unknown
  description?: unknown
  mime_type?: unknown
  input_schema?: unknown
  settlement_mode?: unknown
  schemes?: unknown
  access_minutes?: unknown
  handler?: unknown
  upstream_url?: unknown
  upstream?: UpstreamInput
  enabled?: unknown
}

export interface EndpointTarget {
  handler: string | null
  upstream_url: string | null
  upstream_config: string | null
  /** a new upstream endpoint's signing secret, shown once */
  signingSecret?: string
}

/** Target fields of an endpoint body → columns; exactly one of handler / upstream_url. */
export function endpointTarget(
  config: Readonly<Config>,
  endpointId: string,
  body: EndpointBody,
  previous?: Selectable<EndpointsTable>,
): EndpointTarget {
  const wantsHandler = body.handler !== undefined && body.handler !== null
  const wantsUpstream = body.upstream_url !== undefined && body.upstream_url !== null
  if (wantsHandler && wantsUpstream) throw invalid('handler', 'give either handler or upstream_url, not both')
  if (wantsHandler) return handlerTarget(body)
  const url = wantsUpstream ? checkUpstreamUrl(body.upstream_url, config.allowPrivateUpstreams) : previous?.upstream_url
  if (!url) throw invalid('upstream_url', 'give a hosted handler or an upstream_url')
  const prevConfig = (previous?.upstream_config ?? undefined) as StoredUpstreamConfig | undefined
  // A new upstream endpoint gets a signing secret, shown once; updates keep it.
  const signingSecret = prevConfig ? undefined : newSecret('tgs_').secret
  const stored = buildUpstreamConfig(
    requireMasterKey(config),
    endpointId,
    body.upstream ?? {},
    signingSecret,
    prevConfig,
  )
  return { handler: null, upstream_url: url, upstream_config: JSON.stringify(stored), signingSecret }
}

function handlerTarget(body: EndpointBody): EndpointTarget {
  if (typeof body.handler !== 'string' || !HANDLER.test(body.handler))
    throw invalid('handler', 'expected a hosted handler name')
  knownHandlers ??= new Set(listHandlerSlugs())
  // the proxy could not run it: every paid call would be refused
  if (!knownHandlers.has(body.handler))
    throw invalid(
      'handler',
      `no hosted handler is named "${body.handler}"; the names are the slugs of the platform's hosted endpoints (docs/hosted-services.md)`,
    )
  if (body.upstream !== undefined) throw invalid('upstream', 'upstream options apply only to upstream_url endpoints')
  return { handler: body.handler, upstream_url: null, upstream_config: null }
}

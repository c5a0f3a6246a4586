/**
 * Calls an upstream endpoint once as the proxy would (forwarded headers, signature), without
 * payment, and reports status and latency. The body of the answer is not returned (it may echo secrets).
 */
import { Agent, request } from 'undici'
import { checkUpstreamUrl, guardedLookup } from '../../../net/ssrf-guard.js'
import { signUpstreamRequest } from '../../../proxy/upstream.js'
import { requireMasterKey } from '../../../secrets/wallet-crypto.js'
import { invalid } from '../../accounts/validate.js'
import type { PublishingContext, SellerScope } from '../context.js'
import { decodeUpstreamConfig } from '../upstream-config.js'

export interface TestEndpointBody {
  method?: unknown
  path?: unknown
}

export async function testEndpoint(
  ctx: PublishingContext,
  who: SellerScope,
  namespace: string,
  svcName: string,
  slug: string,
  body: TestEndpointBody,
) {
  const { config } = ctx
  const { endpoint: e } = await ctx.endpoint(who, namespace, svcName, slug)
  if (!e.upstream_url)
    throw invalid('upstream_url', 'this endpoint runs a hosted handler; only upstream endpoints can be tested')
  if (e.mcp_tool) return ctx.mcpUpstreams.test(e)
  if (e.a2a_skill) return ctx.a2aUpstreams.test(e)
  const method = body.method === undefined ? (e.methods[0] ?? 'GET') : String(body.method).toUpperCase()
  if (!e.methods.includes(method)) throw invalid('method', `expected one of ${e.methods.join(', ')}`)
  const settings = decodeUpstreamConfig(e.upstream_config, e.id, [requireMasterKey(config)])
  const target = new URL(checkUpstreamUrl(e.upstream_url, config.allowPrivateUpstreams))
  const pathAndQuery = target.pathname + target.search
  const headers: Record<string, string> = { ...settings.headers, 'x-tollgate-test': '1' }
  for (const h of settings.requiredHeaders) headers[h] ??= 'test'
  headers['x-tollgate-signature'] = signUpstreamRequest(settings.signingSecret, method, pathAndQuery, undefined)
  const agent = new Agent({ connect: { lookup: guardedLookup(config.allowPrivateUpstreams) } })
  const started = performance.now()
  const latency = () => Math.round(performance.now() - started)
  try {
    const res = await request(target.toString(), {
      method: method as 'GET',
      headers,
      dispatcher: agent,
      headersTimeout: settings.timeoutMs,
      bodyTimeout: settings.timeoutMs,
    })
    await res.body.dump()
    return {
      object: 'upstream_test' as const,
      ok: res.statusCode < 500,
      status: res.statusCode,
      latency_ms: latency(),
      error: null,
    }
  } catch (err) {
    return {
      object: 'upstream_test' as const,
      ok: false,
      status: null,
      latency_ms: latency(),
      error: failureReason(err, settings.timeoutMs),
    }
  } finally {
    await agent.close().catch(() => {})
  }
}

/** Why the upstream could not be reached, in words that name no secret. */
function failureReason(err: unknown, timeoutMs: number): string {
  const code = (err as { code?: string }).code ?? ''
  return code === 'ESSRF' || /refused: .* private/.test(String((err as Error).message))
    ? 'the upstream host resolves to a private address'
    : code === 'UND_ERR_HEADERS_TIMEOUT'
      ? `no answer within ${timeoutMs} ms`
      : `could not connect (${code || 'error'})`
}

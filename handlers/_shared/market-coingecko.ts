/**
 * CoinGecko API v3 calls shared by token-price-feed and token-ohlcv-historical.
 *
 * The base URL is COINGECKO_API_URL (production default https://api.coingecko.com/api/v3, the
 * public/demo API). COINGECKO_API_KEY is optional; which header carries it depends on the
 * configured URL, as CoinGecko documents (https://docs.coingecko.com/reference/authentication and
 * https://docs.coingecko.com/v3.0.1/reference/authentication):
 * - a Pro API URL (host pro-api.coingecko.com) sends it as `x-cg-pro-api-key`;
 * - any other URL (the public/demo API) sends it as `x-cg-demo-api-key`.
 */
import { HandlerUpstreamError, type HandlerContext } from '../../src/pool/handler-contract.js'
import { callProvider, joinUrl, optionalSetting, providerSetting, type ProviderCallOptions } from './outbound.js'

/** The header that carries the key for this base URL (see the module comment). */
export function coingeckoKeyHeader(baseUrl: string): 'x-cg-pro-api-key' | 'x-cg-demo-api-key' {
  let host = ''
  try {
    host = new URL(baseUrl).hostname.toLowerCase()
  } catch {
    // an unparsable URL fails in the call itself
  }
  return host === 'pro-api.coingecko.com' ? 'x-cg-pro-api-key' : 'x-cg-demo-api-key'
}

/** GET a CoinGecko path (relative to the configured base): its status and JSON body (502 when not JSON). */
export async function coingeckoGet<T>(
  ctx: HandlerContext,
  path: string,
  query: Record<string, string | number | boolean | undefined>,
  opts: Pick<ProviderCallOptions, 'acceptStatus'> = {},
): Promise<{ status: number; json: T }> {
  const base = providerSetting(ctx, 'COINGECKO_API_URL', 'CoinGecko market data')
  const key = optionalSetting(ctx, 'COINGECKO_API_KEY')
  const headers: Record<string, string> = key ? { [coingeckoKeyHeader(base)]: key } : {}
  const r = await callProvider('CoinGecko', joinUrl(base, path, query), {
    headers,
    acceptStatus: opts.acceptStatus,
    maxBytes: 4 * 1024 * 1024,
  })
  if (r.json === undefined)
    throw new HandlerUpstreamError('upstream_failed', 'CoinGecko answered something that is not JSON')
  return { status: r.status, json: r.json as T }
}

/**
 * People Data Labs enrichment calls, shared by person-enrichment and company-enrichment
 * (https://docs.peopledatalabs.com, "Person Enrichment API" and "Company Enrichment API").
 *
 * PDL answers 404 `{ status: 404, error: { type: "not_found", message } }` when no record matches,
 * 400 `{ status: 400, error: { type: "invalid_request_error", message } }` for unusable parameters,
 * 401/402/403/429 for key, credit and rate problems. The key goes in the X-Api-Key header.
 */
import { callProvider, joinUrl, providerSetting } from './outbound.js'
import { HandlerInputError, HandlerUpstreamError, type HandlerContext } from '../../src/pool/handler-contract.js'

export const PDL_PROVIDER = 'People Data Labs'

export type PdlResult<T> = { found: true; body: T } | { found: false; message: string }

/**
 * One enrichment call. 404 is "no match" (found: false); 400 is the buyer's input (400 on
 * `inputField`), anything else non-2xx a 502.
 */
export async function pdlEnrich<T>(
  ctx: HandlerContext,
  path: string,
  query: Record<string, string | number | undefined>,
  inputField: string,
): Promise<PdlResult<T>> {
  const base = providerSetting(ctx, 'PDL_API_URL', 'enrichment')
  const key = providerSetting(ctx, 'PDL_API_KEY', 'enrichment')
  const r = await callProvider(PDL_PROVIDER, joinUrl(base, path, query), {
    headers: { 'x-api-key': key },
    acceptStatus: [400, 404],
  })
  const body = r.json as (T & { status?: number; error?: { type?: string; message?: string } }) | undefined
  if (!body || typeof body !== 'object')
    throw new HandlerUpstreamError('upstream_failed', `${PDL_PROVIDER} answered something that is not JSON`)
  const message = typeof body.error?.message === 'string' ? body.error.message.slice(0, 200) : ''
  if (r.status === 404) return { found: false, message: message || 'no record matches' }
  if (r.status === 400)
    throw new HandlerInputError(inputField, `${PDL_PROVIDER} could not use this input${message ? `: ${message}` : ''}`)
  return { found: true, body }
}

/** A string field as PDL gives it, else null (some plans answer `true` for fields they hold but do not show). */
export const str = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null)
export const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null)
export const strings = (v: unknown, max: number): string[] =>
  Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string').slice(0, max) : []

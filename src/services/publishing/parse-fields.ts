/** The plain fields of a service or endpoint body: each parsed, or a 400 naming the field. */
import { isSchemeName, SCHEME_NAMES } from '../../schemes/names.js'
import { invalid } from '../accounts/validate.js'
import { validateServiceListing, type ServiceListing } from '../marketplace/validate-listing.js'

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE']

export function parseMethods(v: unknown): string[] {
  if (!Array.isArray(v) || v.length === 0 || v.some((m) => typeof m !== 'string' || !METHODS.includes(m.toUpperCase())))
    throw invalid('methods', `expected a non-empty array of ${METHODS.join(', ')}`)
  return [...new Set(v.map((m: string) => m.toUpperCase()))]
}

export function parsePrice(v: unknown): string {
  if (typeof v !== 'string' || !/^[1-9][0-9]{0,77}$/.test(v))
    throw invalid(
      'price',
      'expected a positive integer of atomic units as a decimal string, e.g. "1000" for 0.001 USDC',
    )
  return v
}

export function parseInputSchema(v: unknown): string | null {
  if (v === null) return null
  if (typeof v !== 'object' || Array.isArray(v)) throw invalid('input_schema', 'expected a JSON Schema object')
  const s = JSON.stringify(v)
  if (s.length > 32_768) throw invalid('input_schema', 'at most 32 KiB')
  return s
}

/** The marketplace fields a service body carries (category, tags, links); the first problem is the 400. */
export function listingFields(body: Record<string, unknown>): ServiceListing {
  const r = validateServiceListing(body)
  if (!r.ok) throw invalid(r.problems[0]!.field, r.problems[0]!.reason)
  return r.value
}

/** The schemes to offer: known names; `exact` is always offered (added when missing). */
export function parseSchemes(v: unknown): string[] {
  if (!Array.isArray(v) || v.some((x) => !isSchemeName(x)))
    throw invalid('schemes', `expected an array of ${SCHEME_NAMES.join(', ')} (exact is always offered)`)
  return [...new Set(['exact', ...(v as string[])])]
}

/** x402 sign-in-with-x paid access in minutes (up to a year), or null: off. */
export function parseAccessMinutes(v: unknown): number | null {
  if (v === null) return null
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > 525_600)
    throw invalid('access_minutes', 'expected whole minutes from 1 to 525600 (a year), or null to turn paid access off')
  return v
}

export function parseSettlement(v: unknown): 'async' | 'sync' {
  if (v !== 'async' && v !== 'sync') throw invalid('settlement_mode', 'expected async or sync')
  return v
}
export function parseDescription(v: unknown): string {
  if (typeof v !== 'string' || v.length > 2000)
    throw invalid('description', 'expected a string of at most 2000 characters')
  return v
}
export function parseMime(v: unknown): string {
  if (typeof v !== 'string' || !/^[\w.+-]+\/[\w.+-]+$/.test(v))
    throw invalid('mime_type', 'expected a media type such as application/json')
  return v
}
export function parseBool(param: string, v: unknown): boolean {
  if (typeof v !== 'boolean') throw invalid(param, 'expected true or false')
  return v
}

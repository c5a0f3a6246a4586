import { getAddress, isAddress } from 'viem'
import { appError } from '../../errors.js'

/** A 400 naming the field, in the catalogue's invalid_parameter shape. */
export function invalid(param: string, detail: string) {
  return appError('invalid_parameter', { param, detail }, { details: { param } })
}

/** Atomic units: a non-negative integer as a decimal string (numbers are refused: they lose precision). */
export function atomicAmount(
  param: string,
  v: unknown,
  opts: { allowNull?: boolean; positive?: boolean } = {},
): string | null {
  if (v === null && opts.allowNull) return null
  if (typeof v !== 'string' || !/^(0|[1-9][0-9]{0,77})$/.test(v))
    throw invalid(
      param,
      `expected a non-negative integer of atomic units as a decimal string, e.g. "1000000" for 1 USDC${usdcHint(v)}`,
    )
  if (opts.positive && v === '0') throw invalid(param, 'must be greater than 0')
  return v
}

/** For a USDC amount sent where atomic units are expected ("0.002"): what to send instead. */
export function usdcHint(v: unknown): string {
  const m = typeof v === 'string' ? /^(\d{1,30})\.(\d{1,6})$/.exec(v.trim()) : null
  if (!m) return ''
  const atomic = BigInt(m[1]!) * 1_000_000n + BigInt(m[2]!.padEnd(6, '0'))
  return `; "${v}" looks like USDC: in atomic units (6 decimals) that is "${atomic}"`
}

/**
 * A 0x-prefixed 20-byte hex address, returned checksummed, or 400. Mixed case must be a valid
 * EIP-55 checksum (a typo in a checksummed address is caught, not sent funds); all lower or all
 * upper case carries no checksum and is accepted.
 */
export function address(param: string, v: unknown): `0x${string}` {
  if (typeof v !== 'string' || !/^0x[0-9a-fA-F]{40}$/.test(v))
    throw invalid(param, 'expected a 0x-prefixed 20-byte hex address')
  const hex = v.slice(2)
  if (hex !== hex.toLowerCase() && hex !== hex.toUpperCase() && !isAddress(v, { strict: true }))
    throw invalid(
      param,
      `the mixed-case address fails its EIP-55 checksum (a mistyped character?); the checksummed form of what was sent is ${getAddress(v.toLowerCase())}: check it, or send it all lower case`,
    )
  return getAddress(v.toLowerCase())
}

export function name(param: string, v: unknown, max = 100): string {
  if (typeof v !== 'string' || v.trim() === '' || v.length > max)
    throw invalid(param, `expected a non-empty string of at most ${max} characters`)
  return v.trim()
}

/** Seller namespaces and endpoint slugs: lower-case, digits, inner dashes, 3–40 characters. */
export const SLUG = /^[a-z0-9](?:[a-z0-9-]{1,38}[a-z0-9])$/
export function slug(param: string, v: unknown): string {
  if (typeof v !== 'string' || !SLUG.test(v) || v.includes('--'))
    throw invalid(param, 'expected 3-40 characters of a-z, 0-9 and single inner dashes')
  return v
}

export function hostname(param: string, v: unknown): string {
  const h = typeof v === 'string' ? v.trim().toLowerCase() : ''
  if (!/^(?=.{1,253}$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z][a-z0-9-]{0,62}$|^localhost$/.test(h))
    throw invalid(param, 'expected a host name such as api.example.com')
  return h
}

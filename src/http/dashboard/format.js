import { ApiError } from './api.js'
import { h } from './dom.js'

export const time = (iso) => (iso ? iso.slice(0, 19).replace('T', ' ') + ' UTC' : '—')
export const short = (hex) => (hex ? h('code', { title: hex }, `${hex.slice(0, 6)}…${hex.slice(-4)}`) : '—')

/** "1500000", 6 → "1.5": integer strings only, so no float rounding. */
export function units(value, decimals) {
  const s = String(value).padStart(decimals + 1, '0')
  const frac = s.slice(-decimals).replace(/0+$/, '')
  return frac ? `${s.slice(0, -decimals)}.${frac}` : s.slice(0, -decimals)
}
export const usdc = (atomic) => (atomic === null ? 'no cap' : `${units(atomic, 6)} USDC`)
/** An atomic amount as the value of a USDC input: "" for null. */
export const usdcInput = (atomic) => (atomic === null || atomic === undefined ? '' : units(atomic, 6))

/**
 * A decimal amount → atomic units of an asset with `decimals` ("0.5", 18 → "500000000000000000").
 * Errors name `param` like the API's do.
 */
export function atomicFrom(label, text, decimals, { param, unit } = {}) {
  const s = text.trim()
  const m = new RegExp(`^(\\d{1,30})(?:\\.(\\d{1,${decimals}}))?$`).exec(s)
  if (!m)
    throw new ApiError(400, {
      message: `${label}: expected an amount such as 5 or 0.25 ${unit} (at most ${decimals} decimals)`,
      param,
    })
  const atomic = BigInt(m[1]) * 10n ** BigInt(decimals) + BigInt((m[2] ?? '').padEnd(decimals, '0'))
  if (atomic === 0n) throw new ApiError(400, { message: `${label}: must be more than 0`, param })
  return atomic.toString()
}

/**
 * "0.25" → "250000" atomic units (what the API takes). Empty → null when `optional` (no cap);
 * otherwise empty is an error, as is 0 when `positive`. Errors name `param` like the API's do.
 */
export function atomicFromUsdc(label, text, { param, optional = true, positive = false } = {}) {
  const s = text.trim()
  if (s === '' && optional) return null
  const m = /^(\d{1,30})(?:\.(\d{1,6}))?$/.exec(s)
  const expected = `${label}: expected a USDC amount such as 5 or 0.25 (at most 6 decimals)${optional ? ', or nothing for no cap' : ''}`
  if (!m) throw new ApiError(400, { message: expected, param })
  const atomic = BigInt(m[1]) * 1_000_000n + BigInt((m[2] ?? '').padEnd(6, '0'))
  if (positive && atomic === 0n) throw new ApiError(400, { message: `${label}: must be more than 0`, param })
  return atomic.toString()
}

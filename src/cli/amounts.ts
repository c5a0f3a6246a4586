/**
 * Amounts as people type them (USDC or ETH with decimals) into the atomic units the API takes
 * (USDC 6 decimals, ETH 18). `tollgate caps set --daily 0.5` sends "500000".
 */
import { UsageError } from './errors.js'

/**
 * @example parseDecimal('0.5', 6, '--daily') // 500000n
 */
export function parseDecimal(text: string, decimals: number, what: string, unit: string): bigint {
  const m = /^(\d*)(?:\.(\d*))?$/.exec(text.trim())
  if (!m || (m[1] === '' && !m[2]))
    throw new UsageError(`${what}: expected an amount of ${unit} such as 0.5, got "${text}"`)
  const frac = m[2] ?? ''
  if (frac.length > decimals)
    throw new UsageError(`${what}: ${unit} has ${decimals} decimals, "${text}" has ${frac.length}`)
  return BigInt(m[1] || '0') * 10n ** BigInt(decimals) + BigInt(frac.padEnd(decimals, '0') || '0')
}

/** USDC with up to 6 decimals → atomic units as a decimal string. */
export function parseUsdc(text: string, what: string): string {
  return parseDecimal(text, 6, what, 'USDC').toString()
}

/** ETH with up to 18 decimals → wei as a decimal string. */
export function parseEth(text: string, what: string): string {
  return parseDecimal(text, 18, what, 'ETH').toString()
}

/**
 * Wei as ETH, without trailing zeros.
 * @example formatEth('1500000000000000000') // '1.5'
 */
export function formatEth(wei: string | bigint): string {
  const a = BigInt(wei)
  const unit = 10n ** 18n
  const frac = (a % unit).toString().padStart(18, '0').replace(/0+$/, '')
  return `${a / unit}${frac ? `.${frac}` : ''}`
}

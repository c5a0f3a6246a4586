/**
 * Atomic USDC units (6 decimals) as a decimal string without trailing zeros.
 * @example formatUsdc('1000') // '0.001'
 */
export function formatUsdc(atomic: string | bigint): string {
  const a = BigInt(atomic)
  const frac = (a % 1_000_000n).toString().padStart(6, '0').replace(/0+$/, '')
  return `${a / 1_000_000n}${frac ? `.${frac}` : ''}`
}

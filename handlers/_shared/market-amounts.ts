/** Token amounts in base units (integer strings) shown with their decimals, without floating-point loss. */

/** "1234500" with 6 decimals → "1.2345"; undefined when the amount is not an integer string. */
export function formatUnits(raw: string, decimals: number): string | undefined {
  if (!/^\d+$/.test(raw)) return undefined
  const v = BigInt(raw)
  if (decimals === 0) return v.toString()
  const s = v.toString().padStart(decimals + 1, '0')
  const whole = s.slice(0, -decimals)
  const frac = s.slice(-decimals).replace(/0+$/, '')
  return frac ? `${whole}.${frac}` : whole
}

/** out / in as a decimal number after scaling both by their decimals (null when either is missing or in is zero). */
export function unitPrice(inRaw: string, inDecimals: number, outRaw: string, outDecimals: number): number | null {
  const a = formatUnits(inRaw, inDecimals)
  const b = formatUnits(outRaw, outDecimals)
  if (a === undefined || b === undefined || Number(a) === 0) return null
  return Number(b) / Number(a)
}

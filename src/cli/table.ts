/**
 * Text tables for a person: a header line, columns padded to their widest cell, two spaces apart
 * (numbers right-aligned), and addresses and hashes shortened to their ends.
 */

export interface Column<R> {
  header: string
  cell: (row: R) => string
  align?: 'left' | 'right'
}

/**
 * @example table([{ header: 'NAME', cell: (r) => r.name }], rows) // ['NAME', 'cli', …]
 */
export function table<R>(columns: Column<R>[], rows: R[]): string[] {
  const cells = rows.map((r) => columns.map((c) => c.cell(r)))
  const widths = columns.map((c, i) => Math.max(c.header.length, ...cells.map((row) => row[i]!.length)))
  const line = (row: string[]) =>
    row
      .map((v, i) => (columns[i]!.align === 'right' ? v.padStart(widths[i]!) : v.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd()
  return [line(columns.map((c) => c.header)), ...cells.map(line)]
}

/**
 * An address or hash cut to its first 6 and last 4 characters; anything shorter as it is.
 * @example short('0x1234567890abcdef1234567890abcdef12345678') // '0x1234…5678'
 */
export function short(hex: string | null | undefined): string {
  if (!hex) return '-'
  return hex.length > 13 ? `${hex.slice(0, 6)}…${hex.slice(-4)}` : hex
}

/** An ISO time as "YYYY-MM-DD HH:MM" UTC. */
export function minute(iso: string): string {
  return iso.replace('T', ' ').slice(0, 16)
}

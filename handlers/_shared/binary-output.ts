import type { HandlerContext, HandlerResult } from '../../src/pool/handler-contract.js'

/**
 * True when the buyer's Accept header asks for JSON and does not accept `contentType`
 * (neither exactly, nor as `type/*`, nor as `*\/*`). Ranges with q=0 count as refused.
 * @example wantsJsonOnly('application/json', 'image/png') // true
 */
export function wantsJsonOnly(accept: string, contentType: string): boolean {
  const [major] = contentType.split('/')
  let json = false
  let binary = false
  for (const part of accept.toLowerCase().split(',')) {
    const [range, ...params] = part.split(';').map((s) => s.trim())
    if (!range) continue
    const q = params.find((p) => p.startsWith('q='))
    if (q && Number(q.slice(2)) === 0) continue
    if (range === 'application/json' || range.endsWith('+json')) json = true
    if (range === contentType || range === `${major}/*` || range === '*/*') binary = true
  }
  return json && !binary
}

/**
 * Wraps binary output: raw bytes normally, `{ contentType, base64 }` JSON when the buyer accepts JSON only.
 * Extra fields (e.g. width, height) ride along in the JSON form only.
 */
export function binaryResult(
  ctx: Pick<HandlerContext, 'accept'>,
  contentType: string,
  bytes: Uint8Array,
  extra: Record<string, unknown> = {},
): HandlerResult {
  if (wantsJsonOnly(ctx.accept ?? '', contentType)) {
    return {
      contentType: 'application/json',
      body: {
        contentType,
        base64: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64'),
        bytes: bytes.byteLength,
        ...extra,
      },
    }
  }
  return {
    contentType,
    body: bytes instanceof Buffer ? new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength) : bytes,
  }
}

import path from 'node:path'

/** Where the `handlers` role listens and the proxy connects: a Unix socket or a TCP address. */
export type HandlerAddress = { path: string } | { host: string; port: number }

/**
 * Parses `unix:/absolute/path.sock` or `tcp://host:port` (HANDLERS_URL, HANDLERS_LISTEN); a
 * string naming the problem when it is neither.
 *
 * @example
 *   parseHandlerAddress('unix:/run/tollgate/handlers.sock') // { path: '/run/tollgate/handlers.sock' }
 *   parseHandlerAddress('tcp://10.0.0.7:4030')             // { host: '10.0.0.7', port: 4030 }
 */
export function parseHandlerAddress(value: string): HandlerAddress | string {
  const v = value.trim()
  if (v.startsWith('unix:')) {
    const p = v.slice('unix:'.length).replace(/^\/\/(?=\/)/, '')
    if (!path.isAbsolute(p)) return `expected unix:/absolute/path.sock, got "${value}"`
    // Linux keeps at most 107 bytes of a socket path
    if (Buffer.byteLength(p) > 100) return `the socket path is too long (at most 100 bytes): "${p}"`
    return { path: p }
  }
  const m = /^tcp:\/\/(\[[0-9a-f:.]+\]|[a-z0-9.-]+):(\d{1,5})$/i.exec(v)
  if (m && Number(m[2]) > 0 && Number(m[2]) < 65536) return { host: m[1]!.replace(/^\[|\]$/g, ''), port: Number(m[2]) }
  return `expected unix:/absolute/path.sock or tcp://host:port, got "${value}"`
}

export function formatHandlerAddress(a: HandlerAddress): string {
  return 'path' in a ? `unix:${a.path}` : `tcp://${a.host.includes(':') ? `[${a.host}]` : a.host}:${a.port}`
}

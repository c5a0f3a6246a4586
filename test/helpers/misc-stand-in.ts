import { createServer, type IncomingHttpHeaders } from 'node:http'

/** One request as the stand-in provider received it. */
export interface ReceivedRequest {
  method: string
  path: string
  query: URLSearchParams
  headers: IncomingHttpHeaders
  body: string
}

/** What a route answers: JSON (`json`) or raw text (`text`), with a status (default 200). */
export interface StandInAnswer {
  status?: number
  json?: unknown
  text?: string
  headers?: Record<string, string>
}

/**
 * A local HTTP stand-in for an outside provider (127.0.0.1, a free port), closed at teardown.
 * `route` answers each request in the provider's documented shape; `received` lists the requests
 * so tests can check what the handler sent (path, query, auth header).
 *
 * @example
 *   const p = await standIn(t, (req) => ({ json: { ok: true } }))
 *   runInline(handler, input, { providers: { SOME_URL: p.url } })
 *   t.equal(p.received[0].query.get('symbol'), 'IBM')
 */
export async function standIn(t: { teardown(fn: () => unknown): void }, route: (req: ReceivedRequest) => StandInAnswer | Promise<StandInAnswer>) {
  const received: ReceivedRequest[] = []
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const u = new URL(req.url ?? '/', 'http://stand-in')
      const r: ReceivedRequest = { method: req.method ?? 'GET', path: u.pathname, query: u.searchParams, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') }
      received.push(r)
      Promise.resolve(route(r)).then(
        (a) => {
          res.statusCode = a.status ?? 200
          for (const [k, v] of Object.entries(a.headers ?? {})) res.setHeader(k, v)
          if (a.json !== undefined) {
            if (!res.hasHeader('content-type')) res.setHeader('content-type', 'application/json')
            res.end(JSON.stringify(a.json))
          } else res.end(a.text ?? '')
        },
        () => {
          res.statusCode = 500
          res.end('stand-in route failed')
        },
      )
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  t.teardown(() => new Promise<void>((r) => {
    server.closeAllConnections()
    server.close(() => r())
  }))
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, received }
}

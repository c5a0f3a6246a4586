import { createServer, type IncomingHttpHeaders } from 'node:http'

/** One request as a stand-in provider received it. */
export interface Received {
  method: string
  path: string
  query: URLSearchParams
  headers: IncomingHttpHeaders
  body: string
  /** the body parsed as JSON, when it is */
  json: any
}

/** What a route answers: JSON (`json`) or raw text (`text`), with a status (default 200). */
export interface Answer {
  status?: number
  json?: unknown
  text?: string
  headers?: Record<string, string>
}

/**
 * A local HTTP stand-in for outside providers (127.0.0.1, a free port), closed at teardown.
 * One for every provider-backed handler test: answer in the provider's documented shape.
 * `route` answers each request in the provider's documented shape; `received` lists what the
 * handler sent, so tests can check path, query, headers and body.
 */
export async function providerStandIn(
  t: { teardown(fn: () => unknown): void },
  route: (req: Received) => Answer | Promise<Answer>,
) {
  const received: Received[] = []
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const u = new URL(req.url ?? '/', 'http://stand-in')
      const body = Buffer.concat(chunks).toString('utf8')
      let json: unknown
      try {
        json = JSON.parse(body)
      } catch {
        json = undefined
      }
      const r: Received = {
        method: req.method ?? 'GET',
        path: u.pathname,
        query: u.searchParams,
        headers: req.headers,
        body,
        json,
      }
      received.push(r)
      // a route that throws answers 500 rather than taking the test process down
      new Promise<Answer>((resolve) => resolve(route(r))).then(
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
  t.teardown(
    () =>
      new Promise<void>((r) => {
        server.closeAllConnections()
        server.close(() => r())
      }),
  )
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, received }
}

/** The older names some tests use. */
export { providerStandIn as standIn, type Received as ReceivedRequest, type Answer as StandInAnswer }

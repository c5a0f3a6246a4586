import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'

export interface SeenRequest {
  method: string
  url: string
  headers: IncomingMessage['headers']
}

/**
 * A local HTTP server on 127.0.0.1 (port 0) for the webpage handlers' tests. Routes map a path
 * (without the query) to a handler; anything else is 404. Records every request it receives.
 *
 * @example
 *   const site = await webpageServer(t, { '/': (req, res) => res.end('<title>x</title>') })
 *   await runInline(handler, { url: `${site.base}/` })
 */
export async function webpageServer(
  t: { teardown(fn: () => unknown): void },
  routes: Record<string, (req: IncomingMessage, res: ServerResponse) => void>,
): Promise<{ base: string; seen: SeenRequest[] }> {
  const seen: SeenRequest[] = []
  const server = createServer((req, res) => {
    seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers })
    const route = routes[(req.url ?? '/').split('?')[0]!]
    if (route) return route(req, res)
    res.statusCode = 404
    res.setHeader('content-type', 'text/plain')
    res.end('not found')
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  t.teardown(
    () =>
      new Promise((r) => {
        server.closeAllConnections()
        server.close(r)
      }),
  )
  return { base: `http://127.0.0.1:${(server.address() as { port: number }).port}`, seen }
}

/** A route answering HTML with optional extra headers. */
export const html =
  (body: string, headers: Record<string, string | string[]> = {}) =>
  (_req: IncomingMessage, res: ServerResponse) => {
    res.setHeader('content-type', 'text/html; charset=utf-8')
    for (const [k, v] of Object.entries(headers)) res.setHeader(k, v)
    res.end(body)
  }

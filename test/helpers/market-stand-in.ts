import { createServer, type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'

/** One request the stand-in received. */
export interface RecordedRequest {
  method: string
  /** the path without the query string */
  path: string
  query: URLSearchParams
  headers: IncomingHttpHeaders
  body: string
  /** the body parsed as JSON, when it is JSON */
  json: unknown
}

/** What a route answers: an object or array is sent as JSON, a string as it is. */
export interface StandInReply {
  status?: number
  body: unknown
  contentType?: string
}

export interface MarketStandIn {
  /** base URL of the stand-in, e.g. http://127.0.0.1:41234 */
  url: string
  /** every request received, in order */
  requests: RecordedRequest[]
  /** the last request received (throws when none arrived) */
  last(): RecordedRequest
  /** replaces the route function (for a test that needs a different answer) */
  route(fn: StandInRoute): void
}

export type StandInRoute = (req: RecordedRequest) => StandInReply | undefined

/**
 * A local HTTP server on 127.0.0.1 standing in for a market-data provider: it records every
 * request and answers with what `route` returns (404 `{"error":"not found"}` when it returns
 * undefined). Closed by the test's teardown.
 *
 * @example
 *   const api = await marketStandIn(t, (req) => req.path === '/simple/price' ? { body: { bitcoin: { usd: 1 } } } : undefined)
 *   await runInline(handler, input, { providers: { COINGECKO_API_URL: api.url } })
 *   t.equal(api.last().query.get('ids'), 'bitcoin')
 */
export async function marketStandIn(t: { teardown(fn: () => unknown): void }, route: StandInRoute): Promise<MarketStandIn> {
  const requests: RecordedRequest[] = []
  let current = route
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const u = new URL(req.url ?? '/', 'http://stand-in')
      const body = Buffer.concat(chunks).toString('utf8')
      let json: unknown
      try {
        json = body ? JSON.parse(body) : undefined
      } catch {
        json = undefined
      }
      const recorded: RecordedRequest = { method: req.method ?? 'GET', path: u.pathname, query: u.searchParams, headers: req.headers, body, json }
      requests.push(recorded)
      let reply: StandInReply | undefined
      try {
        reply = current(recorded)
      } catch (err) {
        reply = { status: 500, body: { error: (err as Error).message } }
      }
      reply ??= { status: 404, body: { error: 'not found' } }
      const text = typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body)
      res.writeHead(reply.status ?? 200, { 'content-type': reply.contentType ?? (typeof reply.body === 'string' ? 'text/plain' : 'application/json') })
      res.end(text)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => {
    server.close(() => resolve())
    server.closeAllConnections()
  }))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    last() {
      const r = requests[requests.length - 1]
      if (!r) throw new Error('the stand-in received no request')
      return r
    },
    route(fn) {
      current = fn
    },
  }
}

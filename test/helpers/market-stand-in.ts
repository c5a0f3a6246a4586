import { providerStandIn, type Received } from './provider-stand-in.js'

/** One request the stand-in received. */
export type RecordedRequest = Received

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
 * A local HTTP server on 127.0.0.1 standing in for a market-data provider (providerStandIn with a
 * body-first answer shape): it records every request and answers with what `route` returns (404
 * `{"error":"not found"}` when it returns undefined). Closed by the test's teardown.
 *
 * @example
 *   const api = await marketStandIn(t, (req) => req.path === '/simple/price' ? { body: { bitcoin: { usd: 1 } } } : undefined)
 *   await runInline(handler, input, { providers: { COINGECKO_API_URL: api.url } })
 *   t.equal(api.last().query.get('ids'), 'bitcoin')
 */
export async function marketStandIn(
  t: { teardown(fn: () => unknown): void },
  route: StandInRoute,
): Promise<MarketStandIn> {
  let current = route
  const { url, received: requests } = await providerStandIn(t, (req) => {
    let reply: StandInReply | undefined
    try {
      reply = current(req)
    } catch (err) {
      reply = { status: 500, body: { error: (err as Error).message } }
    }
    reply ??= { status: 404, body: { error: 'not found' } }
    const text = typeof reply.body === 'string'
    const headers = { 'content-type': reply.contentType ?? (text ? 'text/plain' : 'application/json') }
    return text
      ? { status: reply.status, headers, text: reply.body as string }
      : { status: reply.status, headers, json: reply.body }
  })
  return {
    url,
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

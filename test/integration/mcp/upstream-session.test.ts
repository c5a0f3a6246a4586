import { randomUUID } from 'node:crypto'
import { createServer } from 'node:http'
import t, { type Test } from 'tap'
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import { CallToolRequestSchema, ListToolsRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js'
import { createUpstreamMcpClient } from '../../../src/proxy/upstream-mcp.js'

/**
 * A seller's MCP server (the official SDK, Streamable HTTP), with sessions or stateless. It counts
 * what reached it: initialize requests, tool calls run (with the payment id each carried), GETs,
 * DELETEs. `forget()` drops every session (as a restart or an expiry does); with `forgetAlways` it
 * knows no session at all, even one it just handed out.
 */
async function sellerServer(t: Test, opts: { stateless?: boolean } = {}) {
  const sessions = new Map<string, StreamableHTTPServerTransport>()
  const seen = { initialize: 0, ran: [] as string[], paymentIds: [] as string[], gets: 0, deletes: 0 }
  let forgetAlways = false
  // the next request with a session id is answered 400 with this message instead
  let refuseOnce: string | undefined
  const mcpServer = () => {
    const server = new Server({ name: 'upstream', version: '1.0.0' }, { capabilities: { tools: {} } })
    server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [] }))
    server.setRequestHandler(CallToolRequestSchema, (r, extra) => {
      if (r.params.name === 'nope') throw new McpError(-32602, 'no such tool')
      const n = String(r.params.arguments?.n)
      seen.ran.push(n)
      seen.paymentIds.push(String(extra.requestInfo?.headers['x-tollgate-payment-id']))
      if (r.params.name === 'fail') return { isError: true, content: [{ type: 'text', text: 'down' }] }
      return { content: [{ type: 'text', text: `ran ${n}` }] }
    })
    return server
  }
  const http = createServer((req, res) => {
    let body = ''
    req.on('data', (c: Buffer) => (body += c.toString()))
    req.on('end', async () => {
      const parsed = body ? JSON.parse(body) : undefined
      if (req.method === 'GET') seen.gets++
      if (req.method === 'DELETE') seen.deletes++
      if (parsed?.method === 'initialize') seen.initialize++
      if (opts.stateless) {
        const server = mcpServer()
        const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true })
        res.on('close', () => void server.close())
        await server.connect(transport)
        return transport.handleRequest(req, res, parsed)
      }
      const id = req.headers['mcp-session-id'] as string | undefined
      if (id && refuseOnce !== undefined) {
        const message = refuseOnce
        refuseOnce = undefined
        return void res
          .writeHead(400, { 'content-type': 'application/json' })
          .end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message }, id: null }))
      }
      if (forgetAlways) sessions.clear()
      let transport = id ? sessions.get(id) : undefined
      if (id && !transport)
        return void res
          .writeHead(404, { 'content-type': 'application/json' })
          .end('{"jsonrpc":"2.0","error":{"code":-32001,"message":"Session not found"},"id":null}')
      if (!transport) {
        const created: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
          sessionIdGenerator: randomUUID,
          enableJsonResponse: true,
          onsessioninitialized: (sid) => void sessions.set(sid, created),
        })
        transport = created
        await mcpServer().connect(transport)
      }
      await transport.handleRequest(req, res, parsed)
    })
  })
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', r))
  // no closeAllConnections: closing waits for every connection, so one left open fails the test
  t.teardown(() => new Promise((r) => http.close(r)))
  return {
    url: `http://127.0.0.1:${(http.address() as { port: number }).port}/mcp`,
    seen,
    forget: () => sessions.clear(),
    forgetAlways: (on: boolean) => void (forgetAlways = on),
    refuseOnce: (message: string) => void (refuseOnce = message),
  }
}

function upstreamClient(t: Test, url: string) {
  const client = createUpstreamMcpClient({ allowPrivate: true })
  let closed = false
  t.teardown(() => (closed ? undefined : client.close()))
  const call = (n: number, tool = 'count') =>
    client.callTool({ url, tool, arguments: { n }, options: {}, paymentId: `pay-${n}` })
  return {
    call,
    close: async () => {
      closed = true
      await client.close()
    },
  }
}

t.test('paid tool calls share one session per seller server', async (t) => {
  const seller = await sellerServer(t)
  const { call, close } = upstreamClient(t, seller.url)

  t.match(await call(1), { content: [{ text: 'ran 1' }] })
  t.match(await call(2), { content: [{ text: 'ran 2' }] })
  t.match(await call(3, 'fail'), { isError: true }, 'a tool error: the result as it is')
  await t.rejects(call(4, 'nope'), McpError, 'a JSON-RPC error: thrown')
  t.match(await call(5), { content: [{ text: 'ran 5' }] })
  t.equal(seller.seen.initialize, 1, 'one initialize for five calls (a tool error and a JSON-RPC error keep it)')
  t.same(seller.seen.ran, ['1', '2', '3', '5'])
  t.same(seller.seen.paymentIds, ['pay-1', 'pay-2', 'pay-3', 'pay-5'], 'each call carries its own payment id')
  t.equal(seller.seen.gets, 0, 'no standalone event stream opened')

  await close()
  t.equal(seller.seen.deletes, 1, 'closing ends the session at the server')
})

t.test('concurrent calls: one initialize, each call run once with its own payment id', async (t) => {
  const seller = await sellerServer(t)
  const { call } = upstreamClient(t, seller.url)
  const ns = [1, 2, 3, 4, 5, 6, 7, 8]
  const results = await Promise.all(ns.map((n) => call(n)))
  t.same(
    results.map((r) => r.content),
    ns.map((n) => [{ type: 'text', text: `ran ${n}` }]),
  )
  t.equal(seller.seen.initialize, 1, 'the calls waited for the one session being opened')
  t.same([...seller.seen.ran].sort(), ns.map(String))
  t.same([...seller.seen.paymentIds].sort(), ns.map((n) => `pay-${n}`).sort())

  seller.forget()
  const again = await Promise.all([11, 12, 13, 14].map((n) => call(n)))
  t.same(
    again.map((r) => r.content),
    [11, 12, 13, 14].map((n) => [{ type: 'text', text: `ran ${n}` }]),
    'calls on a session the server forgot: each retried on a new one',
  )
  t.equal(seller.seen.initialize, 2, 'one new session for all of them')
  t.equal(seller.seen.ran.length, 12, 'each ran once')
})

t.test('a session the server expired: initialized again once, the call run once', async (t) => {
  const seller = await sellerServer(t)
  const { call } = upstreamClient(t, seller.url)
  t.match(await call(1), { content: [{ text: 'ran 1' }] })

  seller.forget()
  t.match(await call(2), { content: [{ text: 'ran 2' }] }, 'retried on a new session')
  t.equal(seller.seen.initialize, 2)
  t.same(seller.seen.ran, ['1', '2'], 'the call ran once')

  seller.forgetAlways(true)
  await t.rejects(call(3), { code: 404 }, 'a server that refuses the new session too: the call fails')
  t.equal(seller.seen.initialize, 3, 'after one new session, not more')
  t.same(seller.seen.ran, ['1', '2'], 'and did not run')

  seller.forgetAlways(false)
  t.match(await call(4), { content: [{ text: 'ran 4' }] }, 'the next call opens a session again')
  t.equal(seller.seen.initialize, 4)

  seller.refuseOnce('Bad Request: No valid session ID provided')
  t.match(await call(5), { content: [{ text: 'ran 5' }] }, 'a 400 naming the session: retried on a new one')
  t.equal(seller.seen.initialize, 5)
  seller.refuseOnce('Bad Request: malformed')
  await t.rejects(call(6), { code: 400 }, 'another 400: the call fails, not retried')
  t.equal(seller.seen.initialize, 5)
  t.same(seller.seen.ran, ['1', '2', '4', '5'], 'every call ran at most once')
})

t.test('a stateless seller server (no session id): one initialize, every call works', async (t) => {
  const seller = await sellerServer(t, { stateless: true })
  const { call, close } = upstreamClient(t, seller.url)
  for (const n of [1, 2, 3]) t.match(await call(n), { content: [{ text: `ran ${n}` }] })
  t.match(await Promise.all([4, 5].map((n) => call(n))), [
    { content: [{ text: 'ran 4' }] },
    { content: [{ text: 'ran 5' }] },
  ])
  t.equal(seller.seen.initialize, 1)
  t.same(seller.seen.paymentIds, ['pay-1', 'pay-2', 'pay-3', 'pay-4', 'pay-5'])
  t.equal(seller.seen.gets, 0)
  await close()
  t.equal(seller.seen.deletes, 0, 'no session to end')
})

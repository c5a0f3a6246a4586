import { createServer } from 'node:http'
import t from 'tap'
import { createUpstreamA2aClient } from '../../../src/proxy/upstream-a2a.js'
import { createUpstreamMcpClient } from '../../../src/proxy/upstream-mcp.js'
import { sellerFetch, signUpstreamRequest } from '../../../src/proxy/upstream.js'
import { Agent } from 'undici'

t.test('a private address literal is refused before any request, by both JSON-RPC clients', async (t) => {
  let requests = 0
  const server = createServer((_req, res) => {
    requests++
    res.end('{}')
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  t.teardown(() => new Promise<void>((r) => server.close(() => r())))
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`
  const mcp = createUpstreamMcpClient()
  const a2a = createUpstreamA2aClient()
  t.teardown(() => Promise.all([mcp.close(), a2a.close()]))
  await t.rejects(mcp.listTools(`${url}/mcp`, {}), /private address/)
  await t.rejects(a2a.readCard(`${url}/.well-known/agent-card.json`, {}), /private address/)
  t.equal(requests, 0, 'nothing reached the server')
})

t.test(
  'a seller request carries the forwarded headers, the payment id and a signature over method, path and body',
  async (t) => {
    const seen: Array<{ method?: string; url?: string; headers: Record<string, unknown>; body: string }> = []
    const server = createServer((req, res) => {
      let body = ''
      req.on('data', (c) => (body += c))
      req.on('end', () => {
        seen.push({ method: req.method, url: req.url, headers: req.headers, body })
        res.end('{"ok":true}')
      })
    })
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    t.teardown(() => new Promise<void>((r) => server.close(() => r())))
    const agent = new Agent()
    t.teardown(() => agent.close())
    const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/rpc?x=1`
    const body = '{"jsonrpc":"2.0","id":1,"method":"ping"}'
    const res = await sellerFetch(
      agent,
      true,
      { headers: { 'x-seller': 'yes' }, signingSecret: 's3cret' },
      'pay_1',
      url,
      {
        method: 'POST',
        body,
        headers: { 'content-type': 'application/json' },
      },
    )
    t.same(await res.json(), { ok: true })
    t.equal(seen.length, 1)
    t.equal(seen[0].headers['x-seller'], 'yes')
    t.equal(seen[0].headers['x-tollgate-payment-id'], 'pay_1')
    // the signature carries its own second; the check uses that second (a second may tick between
    // the request and this line) and that second is now, give or take the test's own run time
    const signature = String(seen[0].headers['x-tollgate-signature'])
    const at = Number(/^t=(\d+),/.exec(signature)?.[1])
    t.ok(Math.abs(at - Date.now() / 1000) < 60, 'the signature is stamped with the current time')
    t.equal(signature, signUpstreamRequest('s3cret', 'POST', '/rpc?x=1', Buffer.from(body), at))
    t.equal(seen[0].body, body)
    // no payment id, no secret: neither header
    await sellerFetch(agent, true, {}, undefined, url, { method: 'POST', body })
    t.notOk(seen[1].headers['x-tollgate-payment-id'])
    t.notOk(seen[1].headers['x-tollgate-signature'])
  },
)

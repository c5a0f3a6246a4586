import { createServer, type IncomingHttpHeaders } from 'node:http'
import t, { type Test } from 'tap'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import { CallToolRequestSchema, ListToolsRequestSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import { x402Client } from '@x402/core/client'
import type { PaymentRequired } from '@x402/core/types'
import { ExactEvmScheme } from '@x402/evm'
import { privateKeyToAccount } from 'viem/accounts'
import { parseChallenge } from '../../../src/client/challenge.js'
import { signInHeader, signInOffer } from '../../../src/client/sign-in.js'
import { buildWebApp } from '../../../src/http/web-app.js'
import { createPublishing } from '../../../src/services/publishing/publishing.js'
import { withDevnet } from '../../helpers/devnet.js'
import { startSellerPlatform, upstreamSignatureValid } from '../../helpers/seller.js'
import { until } from '../../helpers/until.js'
import { userWithKey } from '../../helpers/accounts.js'

const devnet = await withDevnet(t)
const x402 = new x402Client().register(
  'eip155:84532',
  new ExactEvmScheme(privateKeyToAccount(devnet.accounts.demoPayer.privateKey)),
)

const quoteSchema = { type: 'object', required: ['symbol'], properties: { symbol: { type: 'string' } } }

/** A seller's MCP server (the official SDK, Streamable HTTP, stateless), recording what reached it. */
async function sellerMcpServer(t: Test) {
  const seen: Array<{ headers: IncomingHttpHeaders; path: string; body: string; method?: string }> = []
  const http = createServer((req, res) => {
    let body = ''
    req.on('data', (c: Buffer) => (body += c.toString()))
    req.on('end', async () => {
      const parsed = body ? JSON.parse(body) : undefined
      seen.push({ headers: req.headers, path: req.url ?? '', body, method: parsed?.method })
      const server = new Server({ name: 'quotes-upstream', version: '2.0.0' }, { capabilities: { tools: {} } })
      server.setRequestHandler(ListToolsRequestSchema, () => ({
        tools: [
          { name: 'get_quote', description: 'A stock quote', inputSchema: quoteSchema as never },
          {
            name: 'shout',
            description: 'Upper case',
            inputSchema: { type: 'object', properties: { text: { type: 'string' } } },
          },
          { name: 'fail', description: 'Always fails', inputSchema: { type: 'object' } },
        ],
      }))
      server.setRequestHandler(CallToolRequestSchema, (r): CallToolResult => {
        const a = (r.params.arguments ?? {}) as Record<string, string>
        if (r.params.name === 'get_quote')
          return {
            content: [{ type: 'text', text: `${a.symbol} 42.5` }],
            structuredContent: { symbol: a.symbol, price: 42.5 },
          }
        if (r.params.name === 'shout') return { content: [{ type: 'text', text: String(a.text).toUpperCase() }] }
        return { isError: true, content: [{ type: 'text', text: 'the quote feed is down' }] }
      })
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true })
      res.on('close', () => void server.close())
      await server.connect(transport)
      await transport.handleRequest(req, res, parsed)
    })
  })
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', r))
  t.teardown(() => new Promise((r) => http.close(r)))
  return { url: `http://127.0.0.1:${(http.address() as { port: number }).port}/mcp`, seen }
}

async function connect(t: Test, url: string): Promise<Client> {
  const client = new Client({ name: 'tollgate-test', version: '1.0.0' })
  await client.connect(new StreamableHTTPClientTransport(new URL(url)))
  t.teardown(() => client.close())
  return client
}

const call = (c: Client, name: string, args: Record<string, unknown>, payment?: unknown) =>
  c.callTool({
    name,
    arguments: args,
    ...(payment === undefined ? {} : { _meta: { 'x402/payment': payment } }),
  }) as Promise<CallToolResult>

t.test('a seller publishes an upstream MCP server: its tools are paid tools of the service', async (t) => {
  const { platform, pub, who } = await startSellerPlatform(t, { devnet, namespace: 'mcpseller', service: 'quotes' })
  const { deps } = platform
  const upstream = await sellerMcpServer(t)

  t.test('validation: SSRF rules as for HTTP upstreams, prices, tools the server has', async (t) => {
    const strict = createPublishing({ ...deps, config: { ...deps.config, allowPrivateUpstreams: false } })
    await t.rejects(strict.putMcpUpstream(who, 'mcpseller', 'quotes', { url: upstream.url, default_price: '1000' }), {
      code: 'upstream_not_allowed',
    })
    await t.rejects(
      pub.putMcpUpstream(who, 'mcpseller', 'quotes', { url: 'ftp://example.com/mcp', default_price: '1000' }),
      { code: 'invalid_parameter', message: /\burl\b/, details: { param: 'url' } },
    )
    await t.rejects(pub.putMcpUpstream(who, 'mcpseller', 'quotes', { url: upstream.url }), {
      code: 'invalid_parameter',
      message: /tool_prices: give a price/,
    })
    await t.rejects(
      pub.putMcpUpstream(who, 'mcpseller', 'quotes', { url: upstream.url, tool_prices: { get_quote: '0.5' } }),
      { code: 'invalid_parameter', message: /tool_prices\.get_quote/ },
    )
    await t.rejects(
      pub.putMcpUpstream(who, 'mcpseller', 'quotes', { url: upstream.url, tool_prices: { nope: '1000' } }),
      { code: 'invalid_parameter', message: /has no tool "nope" \(it has: get_quote, shout, fail\)/ },
    )
    await t.rejects(
      pub.putMcpUpstream(who, 'mcpseller', 'quotes', { url: 'http://127.0.0.1:9/mcp', default_price: '1000' }),
      { code: 'invalid_parameter', message: /could not list the tools/ },
    )
    t.same(
      await deps.db.selectFrom('endpoints').select('id').where('mcp_tool', 'is not', null).execute(),
      [],
      'nothing published',
    )
  })

  let secret: string
  t.test('published with a price per tool, then a default: the tools, their slugs, one signing secret', async (t) => {
    const before = upstream.seen.length
    const first = await pub.putMcpUpstream(who, 'mcpseller', 'quotes', {
      url: upstream.url,
      tool_prices: { get_quote: '2500' },
      upstream: { forward_headers: { 'x-api-key': 'seller-key' } },
    })
    t.match(first, {
      object: 'mcp_upstream',
      url: upstream.url,
      mcp_url: `${platform.proxyUrl}/mcpseller/quotes/mcp`,
      tools: [{ name: 'get_quote', slug: 'get-quote', price: '2500' }],
      unpriced: ['shout', 'fail'],
      upstream: { forward_headers: ['x-api-key'] },
    })
    t.match(first.signing_secret, /^tgs_/)
    secret = first.signing_secret!
    const listing = upstream.seen.slice(before).filter((s) => s.method === 'tools/list')
    t.ok(listing.length > 0, 'publishing listed the tools')
    t.equal(listing[0]!.headers['x-api-key'], 'seller-key', "with the seller's header")
    t.ok(
      upstreamSignatureValid(
        secret,
        listing[0]!.headers['x-tollgate-signature'] as string,
        'POST',
        '/mcp',
        listing[0]!.body,
      ),
      'signed',
    )
    const again = await pub.putMcpUpstream(who, 'mcpseller', 'quotes', {
      url: upstream.url,
      tool_prices: { get_quote: '2500' },
      default_price: '1000',
    })
    t.same(
      again.tools.map((x) => [x.name, x.slug, x.price]),
      [
        ['get_quote', 'get-quote', '2500'],
        ['shout', 'shout', '1000'],
        ['fail', 'fail', '1000'],
      ],
    )
    t.notOk('signing_secret' in again, 'the secret is shown once')
    t.same(again.unpriced, [])
    t.match(again.upstream, { forward_headers: ['x-api-key'] }, 'the headers are kept')
    t.match(
      await pub.testEndpoint(who, 'mcpseller', 'quotes', 'get-quote'),
      { object: 'upstream_test', ok: true, error: null },
      'the test action lists the tools',
    )
  })

  t.test(
    'the proxy fronts it at the service’s /mcp: listed with prices, each call paid and forwarded signed',
    async (t) => {
      await until(
        'the proxy knows the tools',
        async () =>
          (await platform.proxy.inject({ method: 'POST', url: '/mcpseller/quotes/shout' })).statusCode === 402,
      )
      const client = await connect(t, `${platform.proxyUrl}/mcpseller/quotes/mcp`)
      const { tools } = await client.listTools()
      t.same(
        tools.map((x) => x.name),
        ['fail', 'get_quote', 'shout'],
        'the upstream’s tool names',
      )
      const quote = tools.find((x) => x.name === 'get_quote')!
      t.same(quote.inputSchema, quoteSchema)
      t.match(quote.description, /^A stock quote\. Price: 0\.0025 USDC per call/)

      const unpaid = await call(client, 'get_quote', { symbol: 'ACME' })
      t.equal(unpaid.isError, true)
      const required = unpaid.structuredContent as unknown as PaymentRequired
      t.equal(required.accepts[0]!.amount, '2500')
      t.equal(required.resource.url, `${platform.proxyUrl}/mcpseller/quotes/get-quote`)
      t.notOk(
        upstream.seen.some((s) => s.method === 'tools/call'),
        'nothing forwarded without payment',
      )

      const paid = await call(client, 'get_quote', { symbol: 'ACME' }, await x402.createPaymentPayload(required))
      t.notOk(paid.isError, JSON.stringify(paid.content))
      t.same(paid.content, [{ type: 'text', text: 'ACME 42.5' }], 'the upstream’s content as it is')
      t.same(paid.structuredContent, { symbol: 'ACME', price: 42.5 })
      const receipt = paid._meta?.['x402/payment-response'] as { success: boolean; paymentId: string }
      t.equal(receipt.success, true)
      const forwarded = upstream.seen.find((s) => s.method === 'tools/call')!
      t.equal(forwarded.headers['x-api-key'], 'seller-key')
      t.equal(forwarded.headers['x-tollgate-payment-id'], receipt.paymentId, 'the payment id reaches the seller')
      t.ok(
        upstreamSignatureValid(
          secret,
          forwarded.headers['x-tollgate-signature'] as string,
          'POST',
          '/mcp',
          forwarded.body,
        ),
        'the tools/call is signed over its body',
      )
      t.match(JSON.parse(forwarded.body), {
        method: 'tools/call',
        params: { name: 'get_quote', arguments: { symbol: 'ACME' } },
      })
      const row = await deps.db
        .selectFrom('payments')
        .select(['status', 'value'])
        .where('id', '=', receipt.paymentId)
        .executeTakeFirstOrThrow()
      t.equal(row.value, '2500')
      t.not(row.status, 'voided')
    },
  )

  t.test('the same tool over HTTP: the arguments as the JSON body, the tool result as JSON', async (t) => {
    const unpaid = await fetch(`${platform.proxyUrl}/mcpseller/quotes/shout`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"text":"hi"}',
    })
    t.equal(unpaid.status, 402)
    const required = JSON.parse(
      Buffer.from(unpaid.headers.get('payment-required')!, 'base64').toString(),
    ) as PaymentRequired
    const payment = Buffer.from(JSON.stringify(await x402.createPaymentPayload(required))).toString('base64')
    const paid = await fetch(`${platform.proxyUrl}/mcpseller/quotes/shout`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'payment-signature': payment },
      body: '{"text":"hi"}',
    })
    t.equal(paid.status, 200)
    t.same(await paid.json(), { content: [{ type: 'text', text: 'HI' }] })
    t.ok(paid.headers.get('payment-response'), 'with its receipt')
  })

  t.test('a failed upstream tool call is not charged', async (t) => {
    const client = await connect(t, `${platform.proxyUrl}/mcpseller/quotes/mcp`)
    const required = (await call(client, 'fail', {})).structuredContent as unknown as PaymentRequired
    t.equal(required.accepts[0]!.amount, '1000', 'the default price')
    const failed = await call(client, 'fail', {}, await x402.createPaymentPayload(required))
    t.equal(failed.isError, true)
    t.same(failed.content, [{ type: 'text', text: 'the quote feed is down' }], 'the upstream’s own error')
    t.notOk(failed._meta?.['x402/payment-response'], 'no receipt')
    const rows = await deps.db
      .selectFrom('payments as p')
      .innerJoin('endpoints as e', 'e.id', 'p.endpoint_id')
      .select(['p.status', 'p.failure_reason'])
      .where('e.slug', '=', 'fail')
      .execute()
    t.equal(rows.length, 1)
    t.equal(rows[0]!.status, 'voided')
  })

  t.test(
    "paid access on the seller's tools: a signed-in call is forwarded with the granting payment's id, no receipt",
    async (t) => {
      await pub.updateService(who, 'mcpseller', 'quotes', { access_minutes: 5 })
      t.teardown(() => pub.updateService(who, 'mcpseller', 'quotes', { access_minutes: null }))
      const mcpUrl = `${platform.proxyUrl}/mcpseller/quotes/mcp`
      const client = await connect(t, mcpUrl)
      const challenge = async (symbol: string) =>
        (await call(client, 'get_quote', { symbol })).structuredContent as unknown as PaymentRequired
      let required!: PaymentRequired
      await until('the proxy offers sign-in on the tools', async () => {
        required = await challenge('ACME')
        return required.extensions?.['sign-in-with-x'] !== undefined
      })
      const paid = await call(client, 'get_quote', { symbol: 'ACME' }, await x402.createPaymentPayload(required))
      const receipt = paid._meta?.['x402/payment-response'] as { paymentId: string }
      t.ok(receipt?.paymentId, 'paid')
      const payments = () =>
        deps.db
          .selectFrom('payments as p')
          .innerJoin('endpoints as e', 'e.id', 'p.endpoint_id')
          .select('p.id')
          .where('e.slug', '=', 'get-quote')
          .execute()
      const paidRows = (await payments()).length

      const offer = signInOffer([{ parsed: parseChallenge(await challenge('SIGN')) }], mcpUrl)!
      const account = privateKeyToAccount(devnet.accounts.demoPayer.privateKey)
      const proof = await signInHeader(offer, account.address, (message) => account.signMessage({ message }))
      const before = upstream.seen.length
      const r = (await client.callTool({
        name: 'get_quote',
        arguments: { symbol: 'SIGN' },
        _meta: { 'sign-in-with-x': JSON.parse(Buffer.from(proof, 'base64').toString('utf8')) },
      })) as CallToolResult
      t.notOk(r.isError, JSON.stringify(r.content))
      t.same(r.structuredContent, { symbol: 'SIGN', price: 42.5 }, "the upstream's result")
      t.equal(r._meta?.['x402/payment-response'], undefined, 'no receipt: nothing paid')
      const forwarded = upstream.seen.slice(before).find((s) => s.method === 'tools/call')!
      t.equal(forwarded.headers['x-tollgate-payment-id'], receipt.paymentId, "the granting payment's id")
      t.equal(forwarded.headers['sign-in-with-x'], undefined, 'no proof forwarded')
      t.equal((await payments()).length, paidRows, 'no payment recorded')
    },
  )

  t.test('a tool the server stops listing is unpublished on the next read', async (t) => {
    const r = await pub.putMcpUpstream(who, 'mcpseller', 'quotes', {
      url: upstream.url,
      tool_prices: { get_quote: '3000' },
    })
    t.same(
      r.tools.map((x) => [x.name, x.price]),
      [['get_quote', '3000']],
    )
    t.same(r.unpriced, ['shout', 'fail'])
    const enabled = await deps.db
      .selectFrom('endpoints')
      .select(['slug', 'enabled'])
      .where('mcp_tool', 'is not', null)
      .orderBy('slug')
      .execute()
    t.same(enabled, [
      { slug: 'fail', enabled: false },
      { slug: 'get-quote', enabled: true },
      { slug: 'shout', enabled: false },
    ])
  })

  t.test('PUT /v1/sellers/{ns}/services/{svc}/mcp-upstream with an API key', async (t) => {
    const app = await buildWebApp(deps, { logger: false })
    t.teardown(() => app.close())
    const { auth } = await userWithKey(deps)
    t.equal(
      (await app.inject({ method: 'POST', url: '/v1/sellers', headers: auth, payload: { namespace: 'mcp-route' } }))
        .statusCode,
      201,
    )
    t.equal(
      (
        await app.inject({
          method: 'POST',
          url: '/v1/sellers/mcp-route/services',
          headers: auth,
          payload: { name: 'tools', pay_to: devnet.accounts.receiver.address },
        })
      ).statusCode,
      201,
    )
    const put = (payload: Record<string, unknown>) =>
      app.inject({ method: 'PUT', url: '/v1/sellers/mcp-route/services/tools/mcp-upstream', headers: auth, payload })
    const bad = await put({ url: upstream.url, default_price: 'free' })
    t.equal(bad.statusCode, 400)
    t.match(bad.json(), { code: 'invalid_parameter' })
    const ok = await put({
      url: upstream.url,
      default_price: '1000',
      tool_prices: { get_quote: '2000' },
      upstream: { timeout_ms: 5000 },
    })
    t.equal(ok.statusCode, 200, ok.body)
    t.match(ok.json(), {
      object: 'mcp_upstream',
      tools: [{ name: 'get_quote', price: '2000' }, { name: 'shout' }, { name: 'fail' }],
      upstream: { timeout_ms: 5000 },
      signing_secret: /^tgs_/,
    })
    const listed = await app.inject({
      method: 'GET',
      url: '/v1/sellers/mcp-route/services/tools/endpoints',
      headers: auth,
    })
    // the three tools were made in one transaction: listed by slug
    t.match(listed.json().data, [
      { mcp_tool: 'fail' },
      { slug: 'get-quote', mcp_tool: 'get_quote', upstream_url: upstream.url, methods: ['POST'] },
      { mcp_tool: 'shout' },
    ])
  })
})

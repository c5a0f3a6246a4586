import { createHash, createHmac, randomBytes } from 'node:crypto'
import { mkdirSync } from 'node:fs'
import { createServer, type IncomingHttpHeaders } from 'node:http'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import t, { type Test } from 'tap'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js'
import { buildWebApp } from '../../src/http/web-app.js'
import { startTestPlatform } from '../helpers/platform.js'
import { until } from '../helpers/until.js'
import { logIn, openBrowser, serveDashboard } from './browser.js'

// Issue 25 in a browser: a seller publishes an upstream MCP server on the service's page, sees the
// tools it fronts with their prices and the signing secret once, and the API's refusals as the API
// words them. The screenshot goes to .tap/artifacts/dashboard/ (git-ignored).
const ARTIFACTS = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../.tap/artifacts/dashboard')
mkdirSync(ARTIFACTS, { recursive: true })

/** A seller's MCP server (the official SDK, Streamable HTTP, stateless) on loopback, recording what reached it. */
async function sellerMcpServer(t: Test) {
  const seen: Array<{ headers: IncomingHttpHeaders; path: string; body: string }> = []
  const http = createServer((req, res) => {
    let body = ''
    req.on('data', (c: Buffer) => (body += c.toString()))
    req.on('end', async () => {
      seen.push({ headers: req.headers, path: req.url ?? '', body })
      const server = new Server({ name: 'quotes-upstream', version: '1.0.0' }, { capabilities: { tools: {} } })
      server.setRequestHandler(ListToolsRequestSchema, () => ({
        tools: [
          {
            name: 'get_quote',
            description: 'A stock quote',
            inputSchema: { type: 'object', properties: { symbol: { type: 'string' } } },
          },
          { name: 'shout', description: 'Upper case', inputSchema: { type: 'object' } },
          { name: 'fail', description: 'Always fails', inputSchema: { type: 'object' } },
        ],
      }))
      server.setRequestHandler(CallToolRequestSchema, () => ({ content: [{ type: 'text', text: 'ok' }] }))
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true })
      res.on('close', () => void server.close())
      await server.connect(transport)
      await transport.handleRequest(req, res, body ? JSON.parse(body) : undefined)
    })
  })
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', r))
  t.teardown(() => new Promise((r) => http.close(r)))
  return { url: `http://127.0.0.1:${(http.address() as { port: number }).port}/mcp`, seen }
}

/** X-Tollgate-Signature: t=<unix>,v1=hmac(secret, "<t>.<METHOD>.<path>.<sha256(body)>") */
function signedWith(secret: string, header: unknown, path: string, body: string) {
  const m = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(String(header))
  if (!m) return false
  const hash = createHash('sha256').update(body).digest('hex')
  return createHmac('sha256', secret).update(`${m[1]}.POST.${path}.${hash}`).digest('hex') === m[2]
}

t.test('in a browser: publish an upstream MCP server, see its tools and prices, update it', async (t) => {
  const upstream = await sellerMcpServer(t)
  const platform = await startTestPlatform(t, {
    env: { TOLLGATE_ALLOW_PRIVATE_UPSTREAMS: 'true', TOLLGATE_MASTER_KEY: randomBytes(32).toString('hex') },
  })
  const { proxyUrl } = platform
  const server = await serveDashboard(t, platform.deps)
  // the same user API with the default SSRF rules (private upstreams refused); the session cookie
  // is the host's, so the browser is logged in there too
  const strict = await buildWebApp(
    { ...platform.deps, config: { ...platform.deps.config, allowPrivateUpstreams: false } },
    { logger: false },
  )
  t.teardown(() => strict.close())
  const strictBase = await strict.listen({ host: '127.0.0.1', port: 0 })
  const { page, pageErrors, cspViolations, api } = await openBrowser(t)
  await logIn(page, server)
  t.equal((await api('POST', '/v1/sellers', { namespace: 'mcp-shop' })).status, 201)
  const made = await api('POST', '/v1/sellers/mcp-shop/services', {
    name: 'quotes',
    pay_to: platform.devnet.accounts.receiver.address,
  })
  t.equal(made.body.mcp_url, `${proxyUrl}/mcp-shop/quotes/mcp`, 'the API gives the service its MCP endpoint')

  // the service's MCP endpoint with a Copy button, before any MCP server is published
  await page.getByRole('link', { name: 'Seller', exact: true }).click()
  const service = page.locator('#service-mcp-shop-quotes')
  await service
    .locator('code.mcp-url')
    .filter({ hasText: `${proxyUrl}/mcp-shop/quotes/mcp` })
    .waitFor()
  t.ok(await service.getByText('MCP endpoint:').getByRole('button', { name: 'Copy' }).isVisible(), 'a Copy button')

  // the SSRF refusal, as the API words it
  await page.goto(`${strictBase}/dashboard#/sellers`)
  await page.locator('#service-mcp-shop-quotes').getByRole('button', { name: 'Publish an MCP server' }).click()
  let form = page.locator('#mcp-mcp-shop-quotes')
  await form.getByLabel('MCP server URL').fill(upstream.url)
  await form.getByLabel('Default price (USDC)').fill('0.001')
  await form.getByRole('button', { name: 'Publish MCP server' }).click()
  await form
    .locator('.form-error')
    .filter({ hasText: 'the upstream URL is not allowed: 127.0.0.1 is a private, loopback or link-local host' })
    .waitFor()

  // back on the dashboard that allows loopback: a server that does not answer, a tool it does not
  // have, a price the form cannot read
  await page.goto(`${server.base}/dashboard#/sellers`)
  await service.getByRole('button', { name: 'Publish an MCP server' }).click()
  form = page.locator('#mcp-mcp-shop-quotes')
  const error = form.locator('.form-error')
  await form.getByLabel('MCP server URL').fill('http://127.0.0.1:9/mcp')
  await form.getByLabel('Default price (USDC)').fill('0.001')
  await form.getByRole('button', { name: 'Publish MCP server' }).click()
  await error.filter({ hasText: 'could not list the tools of the MCP server at http://127.0.0.1:9/mcp' }).waitFor()
  t.equal(await form.getByLabel('MCP server URL').getAttribute('aria-invalid'), 'true', 'the URL field is marked')
  await form.getByLabel('MCP server URL').fill(upstream.url)
  await form.getByLabel('Default price (USDC)').fill('')
  await form.getByLabel('Price per tool (USDC)').fill('nope: 0.001')
  await form.getByRole('button', { name: 'Publish MCP server' }).click()
  await error.filter({ hasText: 'has no tool "nope" (it has: get_quote, shout, fail)' }).waitFor()
  t.equal(await form.getByLabel('Price per tool (USDC)').getAttribute('aria-invalid'), 'true')
  await form.getByLabel('Price per tool (USDC)').fill('get_quote: 0')
  await form.getByRole('button', { name: 'Publish MCP server' }).click()
  await error.filter({ hasText: 'Price of get_quote: must be more than 0' }).waitFor()
  t.same((await api('GET', '/v1/sellers/mcp-shop/services/quotes/endpoints')).body.data, [], 'nothing published')

  // published: a price per tool, one tool left unpriced; the secret once, with its note
  await form.getByLabel('Price per tool (USDC)').fill('get_quote: 0.0025\nshout: 0.001')
  await form.getByRole('button', { name: 'Publish MCP server' }).click()
  await page
    .locator('#notice.ok')
    .filter({ hasText: `MCP server ${upstream.url} published: get_quote (0.0025 USDC), shout (0.001 USDC)` })
    .filter({ hasText: 'Not published (no price): fail.' })
    .waitFor()
  const panel = page.locator('.secret-panel')
  await panel.getByRole('heading', { name: 'Signing secret for the MCP server of mcp-shop/quotes' }).waitFor()
  await panel.getByText('Copy it now: you will not see it again.').waitFor()
  await panel.getByText('stored encrypted and never shown again').waitFor()
  const secret = (await panel.locator('#new-secret').textContent()) ?? ''
  t.match(secret, /^tgs_/)
  const listed = upstream.seen.filter((r) => r.body.includes('"tools/list"')).at(-1)!
  t.ok(
    signedWith(secret, listed.headers['x-tollgate-signature'], new URL(upstream.url).pathname, listed.body),
    'the server was listed signed with the secret the page showed',
  )

  // the tools with their prices
  const tools = service.locator('.mcp-tools')
  await tools.getByText(upstream.url).waitFor()
  t.match(
    await tools.locator('tr[data-tool="get_quote"]').innerText(),
    /get_quote\s+get-quote\s+0\.0025 USDC\s+enabled/,
  )
  t.match(await tools.locator('tr[data-tool="shout"]').innerText(), /shout\s+shout\s+0\.001 USDC\s+enabled/)
  t.equal(await tools.locator('tr[data-tool="fail"]').count(), 0, 'the unpriced tool is not published')
  t.match(await service.locator('tr[data-endpoint="get-quote"]').innerText(), /MCP tool get_quote/)

  // the proxy serves them at the service's MCP endpoint with those prices
  const client = new Client({ name: 'dashboard-test', version: '1.0.0' })
  await client.connect(new StreamableHTTPClientTransport(new URL(`${proxyUrl}/mcp-shop/quotes/mcp`)))
  t.teardown(() => client.close())
  const atProxy = await until('the tools at the proxy', async () => {
    const list = (await client.listTools()).tools
    return list.length === 2 && list
  })
  t.same(atProxy.map((x) => [x.name, (x._meta?.['tollgate/price'] as { amount: string }).amount]).sort(), [
    ['get_quote', '2500'],
    ['shout', '1000'],
  ])

  // update: the form comes back filled in; a default price publishes the third tool; no new secret
  await panel.getByRole('button', { name: 'Done, I have stored it' }).click()
  await service.getByRole('button', { name: 'Update MCP server' }).click()
  form = page.locator('#mcp-mcp-shop-quotes')
  t.equal(await form.getByLabel('MCP server URL').inputValue(), upstream.url)
  t.equal(await form.getByLabel('Price per tool (USDC)').inputValue(), 'get_quote: 0.0025\nshout: 0.001')
  await form.getByLabel('Default price (USDC)').fill('0.0005')
  await form.getByRole('button', { name: 'Update MCP server' }).click()
  await page.locator('#notice.ok').filter({ hasText: 'fail (0.0005 USDC)' }).waitFor()
  await tools.locator('tr[data-tool="fail"]').filter({ hasText: '0.0005 USDC' }).waitFor()
  t.equal(await page.locator('.secret-panel').count(), 0, 'the secret is not shown again')
  const endpoints = (await api('GET', '/v1/sellers/mcp-shop/services/quotes/endpoints')).body.data
  t.match(
    endpoints.sort((a: { slug: string }, b: { slug: string }) => a.slug.localeCompare(b.slug)),
    [
      { slug: 'fail', mcp_tool: 'fail', price: '500', enabled: true },
      { slug: 'get-quote', mcp_tool: 'get_quote', price: '2500', enabled: true },
      { slug: 'shout', mcp_tool: 'shout', price: '1000', enabled: true },
    ],
  )
  await page.screenshot({ path: path.join(ARTIFACTS, 'mcp-upstream.png'), fullPage: true })

  t.same(pageErrors, [], 'no script errors')
  t.same(cspViolations, [], 'no CSP violations')
})

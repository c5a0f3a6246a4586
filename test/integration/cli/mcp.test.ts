import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import t from 'tap'
import { startBuyerPlatform, type BuyerPlatform } from '../../helpers/buyer.js'
import { mcpHost } from '../../helpers/mcp-host.js'

const call = (c: Client, name: string, args: Record<string, unknown>) =>
  c.callTool({ name, arguments: args }) as Promise<CallToolResult>
const texts = (r: CallToolResult) => r.content.map((c) => (c.type === 'text' ? c.text : `[${c.type}]`)).join('\n')
const cost = (r: CallToolResult) =>
  r._meta?.['tollgate/cost'] as
    { charged: boolean; amount: string; amount_usdc: string; payment_id: string | null } | undefined

const paymentsOf = (p: BuyerPlatform, agentId: string) =>
  p.deps.db
    .selectFrom('agent_payments')
    .select(['id', 'amount', 'status', 'url'])
    .where('agent_id', '=', agentId)
    .orderBy('created_at')
    .execute()

t.test('tollgate mcp: an agent host searches, describes and pays over stdio, within caps and allowlist', async (t) => {
  const p = await startBuyerPlatform(t)
  const [rich, perTx, daily, listed] = await Promise.all([
    p.agent({ fund: 1_000_000n, caps: { daily: '100000' } }),
    p.agent({ fund: 1_000_000n, caps: { per_transaction: '500' } }),
    p.agent({ fund: 1_000_000n, caps: { daily: '1500' } }),
    p.agent({ fund: 1_000_000n, allow: [{ kind: 'host', value: 'example.com' }] }),
  ])
  const envOf = (a: { key: string }) => ({ TOLLGATE_API_URL: p.webUrl, TOLLGATE_AGENT_KEY: a.key })
  const echo = `${p.proxyUrl}/tollgate/toolbox/echo`
  const mcpServer = `${p.proxyUrl}/tollgate/toolbox/mcp`
  const { client, stderr } = await mcpHost(t, envOf(rich))

  t.test('the tools, and stdout carrying only the protocol', async (t) => {
    const { tools } = await client.listTools()
    t.same(tools.map((x) => x.name).sort(), [
      'budget',
      'call_agent',
      'call_endpoint',
      'call_mcp_tool',
      'describe_endpoint',
      'search_marketplace',
    ])
    for (const x of tools) t.equal(x.inputSchema.type, 'object', `${x.name} has an object schema`)
    t.match(stderr(), /tollgate mcp: serving 6 tools/, 'the log went to stderr')
  })

  // what search_marketplace returns is what call_endpoint is called with below
  let found: { url: string; method: string } | undefined
  t.test('search_marketplace finds endpoints by what they do, priced, callable next', async (t) => {
    const r = await call(client, 'search_marketplace', { query: 'echo' })
    t.notOk(r.isError, texts(r))
    const { endpoints, total } = r.structuredContent as {
      total: number
      endpoints: Array<{
        url: string
        price_usdc: string
        input_fields: string[]
        call_endpoint: { url: string; method: string }
        mcp_server?: string
        mcp_tool?: string
      }>
    }
    t.ok(total >= 1)
    const ep = endpoints[0]!
    t.equal(ep.url, echo, 'the echo endpoint first')
    t.equal(ep.price_usdc, '0.001')
    t.ok(ep.input_fields.includes('msg'), 'its input fields')
    t.same(ep.call_endpoint, { url: echo, method: 'GET' })
    t.equal(ep.mcp_server, mcpServer)
    t.equal(ep.mcp_tool, 'echo')
    t.match(texts(r), /0\.001 USDC/)
    found = ep.call_endpoint
    const none = await call(client, 'search_marketplace', { query: 'echo', max_price_usdc: '0.0001' })
    t.equal((none.structuredContent as { total: number }).total, 0, 'max_price_usdc filters')
  })

  t.test('describe_endpoint: price and input of an HTTP endpoint and of an MCP tool, nothing paid', async (t) => {
    const http = await call(client, 'describe_endpoint', { url: echo, method: 'POST' })
    t.notOk(http.isError, texts(http))
    t.match(texts(http), /price 0\.001 USDC/)
    t.match(texts(http), /would pay 0\.001 USDC/)
    t.match(texts(http), /msg/, 'the input schema names its fields')
    const tool = await call(client, 'describe_endpoint', { url: mcpServer, tool: 'echo' })
    t.notOk(tool.isError, texts(tool))
    t.match(tool.structuredContent, {
      tool: 'echo',
      price_usdc: '0.001',
      input_schema: { type: 'object', properties: { msg: { type: 'string' } } },
    })
    const missing = await call(client, 'describe_endpoint', { url: mcpServer, tool: 'no-such-tool' })
    t.equal(missing.isError, true)
    t.match(texts(missing), /has no tool "no-such-tool"; it has: .*echo/)
    t.same(await paymentsOf(p, rich.id), [], 'nothing paid')
  })

  t.test('call_endpoint pays from the agent wallet and says what it cost', async (t) => {
    t.ok(found, 'search_marketplace gave the arguments')
    const r = await call(client, 'call_endpoint', { url: found!.url, method: 'POST', body: { msg: 'paid over mcp' } })
    t.notOk(r.isError, texts(r))
    t.match(r.structuredContent, { echo: { msg: 'paid over mcp' } })
    t.match(texts(r), /cost: 0\.001 USDC, paid to 0x[0-9a-fA-F]{40} from the agent wallet/)
    t.match(cost(r), { charged: true, amount: '1000', amount_usdc: '0.001' })
    const rows = await paymentsOf(p, rich.id)
    t.equal(rows.length, 1)
    t.equal(rows[0]!.id, cost(r)!.payment_id)
    t.equal(rows[0]!.url, echo)
  })

  t.test('call_mcp_tool pays a paid MCP tool (the proxy’s own server) and says what it cost', async (t) => {
    const r = await call(client, 'call_mcp_tool', {
      server_url: mcpServer,
      tool: 'echo',
      arguments: { msg: 'tool call' },
    })
    t.notOk(r.isError, texts(r))
    t.match(r.structuredContent, { echo: { msg: 'tool call' } })
    t.match(texts(r), /cost: 0\.001 USDC, paid to/)
    t.match(cost(r), { charged: true, amount: '1000' })
    t.match(r._meta?.['x402/payment-response'], { success: true }, 'the seller’s receipt is kept')
    const rows = await paymentsOf(p, rich.id)
    t.equal(rows.length, 2)
    t.equal(rows[1]!.status, 'accepted', 'reported to the platform as accepted')
  })

  t.test('budget shows the spending', async (t) => {
    const r = await call(client, 'budget', {})
    t.notOk(r.isError, texts(r))
    t.match(r.structuredContent, { spent: { daily: '2000' }, headroom: { daily: '98000' } })
    t.match(texts(r), /spent today 0\.002 USDC/)
  })

  t.test('bad input is a tool error, and the server goes on', async (t) => {
    const unknown = await call(client, 'pay_everything', {})
    t.equal(unknown.isError, true)
    t.match(texts(unknown), /no tool "pay_everything"; the tools are /)
    const badArgs = await call(client, 'call_endpoint', { url: 42, verb: 'GET' })
    t.equal(badArgs.isError, true)
    t.match(texts(badArgs), /bad arguments for call_endpoint: .*additional properties \(verb\); \/url must be string/)
    const notHttp = await call(client, 'call_endpoint', { url: 'file:///etc/passwd' })
    t.equal(notHttp.isError, true)
    t.match(texts(notHttp), /not an absolute http\(s\) URL/)
    // the unpaid call gets the challenge before the input is read, so a payment is signed; the paid
    // call is then refused for its input before any payment work: never collected, not charged
    const badToolArgs = await call(client, 'call_mcp_tool', {
      server_url: mcpServer,
      tool: 'echo',
      arguments: { msg: 7 },
    })
    t.equal(badToolArgs.isError, true, texts(badToolArgs))
    t.match(texts(badToolArgs), /invalid value for msg[^]*cost: nothing charged: the call failed/)
    t.match(cost(badToolArgs), { charged: false, amount: '0' })
    const noSuchTool = await call(client, 'call_mcp_tool', {
      server_url: mcpServer,
      tool: 'no-such-tool',
      arguments: {},
    })
    t.equal(noSuchTool.isError, true)
    t.match(texts(noSuchTool), /not_found/)
    const rows = await paymentsOf(p, rich.id)
    t.equal(rows.length, 3, 'one more signed (the bad tool arguments), none for the rest')
    t.not(rows[2]!.status, 'accepted', 'the voided one is not counted as accepted')
    const r = await call(client, 'budget', {})
    t.notOk(r.isError, 'still serving')
  })

  t.test('caps: a per-transaction cap and a daily cap refuse with what to do, nothing charged', async (t) => {
    const [a, b] = await Promise.all([mcpHost(t, envOf(perTx)), mcpHost(t, envOf(daily))])
    for (const r of [
      await call(a.client, 'call_endpoint', { url: echo, body: { msg: 'x' } }),
      await call(a.client, 'call_mcp_tool', { server_url: mcpServer, tool: 'echo', arguments: { msg: 'x' } }),
    ]) {
      t.equal(r.isError, true)
      t.match(
        texts(r),
        /payment refused \(spend_cap_exceeded\): the price [\d.]+ USDC is above the per-transaction cap of [\d.]+ USDC\. Nothing was paid\.\nto fix: raise the agent's per_transaction spend cap/,
      )
      t.match(r.structuredContent, { error: { code: 'spend_cap_exceeded', details: { cap: 'per_transaction' } } })
    }
    t.same(await paymentsOf(p, perTx.id), [], 'nothing signed for the capped agent')

    const first = await call(b.client, 'call_mcp_tool', {
      server_url: mcpServer,
      tool: 'echo',
      arguments: { msg: 'one' },
    })
    t.notOk(first.isError, texts(first))
    const second = await call(b.client, 'call_endpoint', { url: echo, body: { msg: 'two' } })
    t.equal(second.isError, true)
    t.match(
      texts(second),
      /spend_cap_exceeded\): the daily spend cap of [\d.]+ USDC would be exceeded: [\d.]+ USDC spent in this UTC day, [\d.]+ USDC left, [\d.]+ USDC asked\. Nothing was paid\.[^]*to fix: raise the agent's daily spend cap .* or wait for the UTC day to turn/,
    )
    t.equal((await paymentsOf(p, daily.id)).length, 1, 'only the first was paid')
  })

  t.test('allowlist: a seller not on it is refused, nothing charged', async (t) => {
    const { client: c } = await mcpHost(t, envOf(listed))
    for (const r of [
      await call(c, 'call_endpoint', { url: echo, body: { msg: 'x' } }),
      await call(c, 'call_mcp_tool', { server_url: mcpServer, tool: 'echo', arguments: { msg: 'x' } }),
    ]) {
      t.equal(r.isError, true)
      t.match(texts(r), /payment refused \(seller_not_allowed\)[^]*to fix: add the seller to the agent's allowlist/)
    }
    t.same(await paymentsOf(p, listed.id), [])
  })

  t.test('--remote: a paid MCP server’s tools as local ones, each call paid', async (t) => {
    const { client: c, stderr: err } = await mcpHost(t, envOf(rich), ['--remote', mcpServer])
    const { tools } = await c.listTools()
    const tool = tools.find((x) => x.name === 'echo')
    t.ok(tool, 'the remote’s tools are listed')
    t.match(tool?.description, /0\.001 USDC per call/)
    t.match(err(), /serving the tools of/)
    const r = await call(c, 'echo', { msg: 'remote' })
    t.notOk(r.isError, texts(r))
    t.match(r.structuredContent, { echo: { msg: 'remote' } })
    t.match(texts(r), /cost: 0\.001 USDC, paid to/)
    t.match(cost(r), { charged: true })
    // the proxy's tools offer batch-settlement, paid by default: the voucher signed for the bad tool
    // arguments above was never charged, so this call signed that cumulative voucher again, on its
    // row (counted again), not a new one
    const rows = await paymentsOf(p, rich.id)
    t.equal(rows.length, 3)
    t.equal(cost(r)!.payment_id, rows[2]!.id, 'the voided voucher, signed again')
    t.same(
      rows.map((x) => x.status),
      ['accepted', 'accepted', 'accepted'],
    )
    const unknown = await call(c, 'no-such-tool', {})
    t.equal(unknown.isError, true)
    t.match(texts(unknown), /cost: nothing/)
  })

  t.test('--remote with a capped agent: the refusal is a tool error', async (t) => {
    const { client: c } = await mcpHost(t, envOf(perTx), ['--remote', mcpServer])
    const r = await call(c, 'echo', { msg: 'x' })
    t.equal(r.isError, true)
    t.match(texts(r), /spend_cap_exceeded/)
    t.same(await paymentsOf(p, perTx.id), [])
  })
})

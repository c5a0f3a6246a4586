/**
 * The tools `tollgate mcp` gives an agent host: search the marketplace, describe an endpoint (its
 * price and input, and what the agent's wallet would do), call an x402 HTTP endpoint or a paid MCP
 * tool paying from the agent's platform wallet (caps and allowlist enforced by the platform), and
 * the budget. Each tool is a name, a JSON Schema for its arguments and a function to a tool result.
 */
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js'
import { offeredChallenges, type Requirement } from '../../client/challenge.js'
import { callPaidTool } from '../../client/pay-mcp-tool.js'
import { a2aClient, callPaidSkill } from '../../client/pay-a2a-skill.js'
import { createMarketplaceClient } from '../../marketplace-client.js'
import { contentOf } from '../../transports/mcp.js'
import { formatUsdc } from '../../x402/usdc-amount.js'
import { UsageError } from '../errors.js'
import { headroomLines, type Budget } from '../commands/budget.js'
import { dryRun } from '../commands/inspect.js'
import type { McpSession } from './session.js'
import { withCost } from './tool-results.js'

export interface AgentTool extends Tool {
  run(args: Record<string, any>, s: McpSession, signal: AbortSignal): Promise<CallToolResult>
}

const url = { type: 'string', description: 'an absolute http(s) URL' }
const method = {
  type: 'string',
  pattern: '^[A-Za-z]{1,10}$',
  description: 'HTTP method (default GET, or POST when a body is given)',
}

export const AGENT_TOOLS: AgentTool[] = [
  {
    name: 'search_marketplace',
    description:
      'Search the Tollgate marketplace for paid API endpoints by what they do, best match first: each with its URL, methods, price in USDC, description and input fields, and the arguments to pass to call_endpoint to call it (platform endpoints also name their MCP server and tool for call_mcp_tool). Example listings (made-up hosts) are left out. Free.',
    inputSchema: {
      type: 'object',
      properties: {
        query: { type: 'string', maxLength: 200, description: 'words saying what the endpoint should do, e.g. "hash"' },
        namespace: { type: 'string', maxLength: 64, description: "one seller's endpoints (tollgate: the hosted ones)" },
        max_price_usdc: {
          type: 'string',
          pattern: '^[0-9]{1,12}(\\.[0-9]{1,6})?$',
          description: 'at most this per call',
        },
        method: { type: 'string', enum: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] },
        network: {
          type: 'string',
          enum: ['base', 'base-sepolia'],
          description: "default: the network of the API's deployment",
        },
        limit: { type: 'integer', minimum: 1, maximum: 50, default: 10 },
      },
      additionalProperties: false,
    },
    run: searchMarketplace,
  },
  {
    name: 'describe_endpoint',
    description:
      "What an x402 endpoint costs and takes, without paying: its price, network, payee and input schema, and whether the agent's caps, allowlist and balance would let it pay. For a paid MCP tool give the MCP server's URL as url and the tool's name as tool. Free.",
    inputSchema: {
      type: 'object',
      required: ['url'],
      properties: {
        url,
        method,
        tool: { type: 'string', minLength: 1, maxLength: 200, description: 'a tool of the MCP server at url' },
      },
      additionalProperties: false,
    },
    run: describeEndpoint,
  },
  {
    name: 'call_endpoint',
    description:
      "Call an x402 HTTP endpoint; when it asks for payment, the agent's platform wallet pays (within its spend caps and seller allowlist) and the call is retried once. The result says what it cost.",
    inputSchema: {
      type: 'object',
      required: ['url'],
      properties: {
        url,
        method,
        body: { description: 'request body: a JSON value (sent as application/json) or a string (sent as given)' },
        headers: { type: 'object', additionalProperties: { type: 'string' }, description: 'request headers' },
      },
      additionalProperties: false,
    },
    run: callEndpoint,
  },
  {
    name: 'call_mcp_tool',
    description:
      "Call a tool of a paid MCP server (x402 over MCP, e.g. a Tollgate service at <proxy>/<namespace>/<service>/mcp); the agent's platform wallet pays its price (within caps and allowlist). The result says what it cost.",
    inputSchema: {
      type: 'object',
      required: ['server_url', 'tool'],
      properties: {
        server_url: { ...url, description: "the MCP server's Streamable HTTP URL" },
        tool: { type: 'string', minLength: 1, maxLength: 200 },
        arguments: { type: 'object', description: "the tool's arguments (describe_endpoint gives its input schema)" },
      },
      additionalProperties: false,
    },
    run: callMcpTool,
  },
  {
    name: 'call_agent',
    description:
      "Call a skill of a paid A2A agent (x402 over A2A, e.g. a Tollgate service's agent, whose Agent Card is at <proxy>/<namespace>/<service>/a2a/.well-known/agent-card.json); the agent's platform wallet pays its price (within caps and allowlist). The result says what it cost.",
    inputSchema: {
      type: 'object',
      required: ['agent_card_url', 'skill'],
      properties: {
        agent_card_url: { ...url, description: "the agent's Agent Card URL" },
        skill: { type: 'string', minLength: 1, maxLength: 200, description: "the skill's id (the card lists them)" },
        input: { type: 'object', description: "the skill's input, a JSON object" },
      },
      additionalProperties: false,
    },
    run: callAgent,
  },
  {
    name: 'budget',
    description:
      "The agent's wallet balance, cap headroom (per transaction, daily, monthly), what it spent today and this month, and the sellers it may pay. Free.",
    inputSchema: { type: 'object', properties: {}, additionalProperties: false },
    run: budget,
  },
]

async function searchMarketplace(a: Record<string, any>, s: McpSession, signal: AbortSignal): Promise<CallToolResult> {
  const market = createMarketplaceClient({ baseUrl: s.settings.apiUrl, fetch: s.fetch as typeof fetch })
  const filters = Object.fromEntries(
    Object.entries({
      search: a.query?.trim() || undefined,
      namespace: a.namespace,
      maxPrice: a.max_price_usdc,
      method: a.method,
      network: a.network,
      limit: a.limit ?? 10,
    }).filter(([, v]) => v !== undefined),
  )
  const page = await market.searchEndpoints(filters, { signal })
  const endpoints = page.items.map((e) => {
    const method = e.methods.includes('GET') ? 'GET' : (e.methods[0] ?? 'POST')
    return {
      url: e.url,
      name: e.namespace ? `${e.namespace}/${e.service}/${e.slug}` : `${e.entry.name}: ${e.slug}`,
      methods: e.methods,
      price_usdc: e.price.usdc,
      description: e.description,
      input_fields: e.inputFields,
      call_endpoint: { url: e.url, method },
      ...(e.mcp ? { mcp_server: e.mcp.server, mcp_tool: e.mcp.tool } : {}),
      ...(e.a2a ? { call_agent: { agent_card_url: e.a2a.agent_card, skill: e.a2a.skill } } : {}),
    }
  })
  const lines = endpoints.map(
    (p) =>
      `${p.methods.join('|')} ${p.url}  ${p.price_usdc ?? '?'} USDC${p.description ? `  ${p.description}` : ''}${p.input_fields.length ? `  (input: ${p.input_fields.join(', ')})` : ''}${p.mcp_server ? `  (MCP: tool ${p.mcp_tool} at ${p.mcp_server})` : ''}${p.call_agent ? `  (A2A: skill ${p.call_agent.skill} of ${p.call_agent.agent_card_url})` : ''}`,
  )
  const head = `${page.total} endpoint${page.total === 1 ? '' : 's'}${page.total > endpoints.length ? `, the best ${endpoints.length} shown` : ''}; call one with call_endpoint {url, method}`
  return {
    content: [{ type: 'text', text: [head, ...lines].join('\n') }],
    structuredContent: { total: page.total, endpoints },
  }
}

async function describeEndpoint(a: Record<string, any>, s: McpSession, signal: AbortSignal): Promise<CallToolResult> {
  const target = httpUrl(a.url, 'url')
  if (a.tool !== undefined) return describeTool(target, a.tool, s)
  const m = (a.method ?? 'GET').toUpperCase()
  const res = await s.fetch(target, { method: m, signal })
  if (res.status !== 402) {
    await res.body?.cancel()
    return {
      content: [
        {
          type: 'text',
          text: `no payment required: ${m} ${target} answered HTTP ${res.status} without a payment (call_endpoint calls it for free)`,
        },
      ],
      structuredContent: { url: target, method: m, payment_required: false, status: res.status },
    }
  }
  const header = res.headers.get('payment-required')
  const text = await res.text()
  let body: unknown
  try {
    body = JSON.parse(text)
  } catch {
    body = undefined
  }
  const offered = offeredChallenges(header, body)
  if (offered.length === 0) throw new UsageError(`${m} ${target} answered 402 without a readable x402 challenge`)
  const reqs = offered[0]!.parsed.accepts
  const schema = (r: Requirement) =>
    r.inputSchema ??
    offered
      .slice(1)
      .flatMap((c) => c.parsed.accepts)
      .find((x) => x.inputSchema !== undefined)?.inputSchema
  const dry = s.settings.agentKey
    ? await dryRun(target, m, offered, s.fetch, s.settings.apiUrl, s.settings.agentKey, s.upto, s.batch)
    : { unavailable: 'unknown (no agent key)' }
  const requirements = reqs.map((r) => ({
    price_usdc: formatUsdc(r.amount.toString()),
    amount: r.amount.toString(),
    scheme: r.scheme,
    network: r.network,
    pay_to: r.payTo,
    description: r.description ?? null,
    input_schema: schema(r) ?? null,
  }))
  const lines = [
    `${m} ${target}`,
    ...requirements.map(
      (r) =>
        `price ${r.price_usdc} USDC (${r.scheme} on ${r.network}) to ${r.pay_to}${r.description ? `\ndescription ${r.description}` : ''}`,
    ),
    `input ${JSON.stringify(requirements[0]?.input_schema ?? null)}`,
    ...('lines' in dry ? dry.lines : [`the agent's side: ${dry.unavailable}`]),
    'nothing was paid',
  ]
  return {
    content: [{ type: 'text', text: lines.join('\n') }],
    structuredContent: {
      url: target,
      method: m,
      payment_required: true,
      requirements,
      preview: 'preview' in dry ? dry.preview : null,
    },
  }
}

async function describeTool(server: string, name: string, s: McpSession): Promise<CallToolResult> {
  const client = await s.mcp(server)
  const tools: Tool[] = []
  let cursor: string | undefined
  do {
    const page = await client.listTools(cursor ? { cursor } : undefined)
    tools.push(...page.tools)
    cursor = page.nextCursor
  } while (cursor && tools.length < 10_000)
  const tool = tools.find((x) => x.name === name)
  if (!tool)
    throw new UsageError(`${server} has no tool "${name}"; it has: ${tools.map((x) => x.name).join(', ') || 'none'}`)
  const price = tool._meta?.['tollgate/price'] as { usdc?: string; network?: string } | undefined
  const reqs = tool._meta?.['x402/payment-requirements'] as
    Array<{ amount?: string; network?: string; payTo?: string }> | undefined
  const usdc = price?.usdc ?? (reqs?.[0]?.amount ? formatUsdc(reqs[0].amount) : undefined)
  const lines = [
    `tool ${tool.name} at ${server}`,
    ...(tool.description ? [tool.description] : []),
    usdc
      ? `price ${usdc} USDC per call${reqs?.[0]?.payTo ? ` to ${reqs[0].payTo}` : ''}`
      : 'price: not listed (asked for when called)',
    `input ${JSON.stringify(tool.inputSchema)}`,
    'nothing was paid',
  ]
  return {
    content: [{ type: 'text', text: lines.join('\n') }],
    structuredContent: {
      server_url: server,
      tool: tool.name,
      description: tool.description ?? null,
      price_usdc: usdc ?? null,
      input_schema: tool.inputSchema,
      payment_requirements: reqs ?? null,
    },
  }
}

async function callEndpoint(a: Record<string, any>, s: McpSession, signal: AbortSignal): Promise<CallToolResult> {
  const target = httpUrl(a.url, 'url')
  const headers = new Headers(a.headers ?? {})
  let body: string | undefined
  if (typeof a.body === 'string') body = a.body
  else if (a.body !== undefined) {
    body = JSON.stringify(a.body)
    if (!headers.has('content-type')) headers.set('content-type', 'application/json')
  }
  const m = (a.method ?? (body !== undefined ? 'POST' : 'GET')).toUpperCase()
  const res = await s.paidFetch()(target, {
    method: m,
    headers,
    body,
    signal,
  })
  const bytes = Buffer.from(await res.arrayBuffer())
  const { content, structured } = contentOf(bytes, res.headers.get('content-type') ?? undefined, target)
  const failed = res.status >= 400
  const result: CallToolResult = {
    ...(failed ? { isError: true } : {}),
    content: [...(failed ? [{ type: 'text' as const, text: `HTTP ${res.status} ${res.statusText}` }] : []), ...content],
    ...(structured && !failed ? { structuredContent: structured } : {}),
    _meta: { 'tollgate/status': res.status },
  }
  return withCost(result, res.payment, res.signedIn)
}

async function callMcpTool(a: Record<string, any>, s: McpSession, signal: AbortSignal): Promise<CallToolResult> {
  const serverUrl = httpUrl(a.server_url, 'server_url')
  const client = await s.mcp(serverUrl)
  const { result, payment, signedIn } = await callPaidTool(
    client,
    s.payer(),
    { name: a.tool, arguments: a.arguments ?? {} },
    { signal, serverUrl, paidAccess: s.paidAccess },
  )
  return withCost(result, payment, signedIn)
}

async function callAgent(a: Record<string, any>, s: McpSession, signal: AbortSignal): Promise<CallToolResult> {
  const cardUrl = httpUrl(a.agent_card_url, 'agent_card_url')
  const payer = s.payer()
  const r = await callPaidSkill(await a2aClient(cardUrl, s.fetch), payer, String(a.skill), a.input ?? {}, { signal })
  const failed = r.state !== 'completed'
  const content = r.parts.map((p) => ({
    type: 'text' as const,
    text: p.kind === 'text' ? p.text : JSON.stringify(p.kind === 'data' ? p.data : p),
  }))
  const data = r.parts.find((p) => p.kind === 'data')
  const structured =
    data?.kind === 'data' && typeof data.data === 'object' && data.data !== null ? data.data : undefined
  const result: CallToolResult = {
    ...(failed ? { isError: true } : {}),
    content: [...(failed ? [{ type: 'text' as const, text: `task ${r.state}: ${r.text}` }] : []), ...content],
    ...(structured && !failed && !Array.isArray(structured)
      ? { structuredContent: structured as Record<string, unknown> }
      : {}),
    _meta: { 'tollgate/a2a-state': r.state },
  }
  return withCost(result, r.payment)
}

async function budget(_a: Record<string, any>, s: McpSession): Promise<CallToolResult> {
  s.agentKey()
  const b = await s.api.agent<
    Budget & {
      address: string
      balance: string | null
      unsettled: string
      available: string | null
      balance_error: string | null
      allowlist: Array<{ kind: string; value: string }>
    }
  >('GET', '/v1/agent')
  const lines = [
    `agent ${b.address}`,
    b.balance === null
      ? `balance unavailable (${b.balance_error})`
      : `balance ${formatUsdc(b.balance)} USDC, of which ${formatUsdc(b.unsettled)} signed and not settled yet: ${formatUsdc(b.available!)} USDC available`,
    'cap headroom:',
    ...headroomLines(b),
    `sellers ${b.allowlist.length ? b.allowlist.map((e) => `${e.kind} ${e.value}`).join(', ') : 'any (no allowlist)'}`,
  ]
  return {
    content: [{ type: 'text', text: lines.join('\n') }],
    structuredContent: b as unknown as Record<string, unknown>,
  }
}

function httpUrl(u: string, name: string): string {
  const parsed = URL.parse(u)
  if (!parsed || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:'))
    throw new UsageError(`${name} is not an absolute http(s) URL: ${u}`)
  return parsed.href
}

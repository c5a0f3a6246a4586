import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv'
import {
  CallToolRequestSchema,
  ListToolsRequestSchema,
  type CallToolRequest,
  type CallToolResult,
  type Implementation,
  type ListToolsResult,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { toolMethod, type McpTransport } from '../transports/mcp.js'
import { formatUsdc } from '../x402/usdc-amount.js'
import type { EndpointEntry, EndpointTable } from './endpoint-table.js'
import { answerDirect, type McpToolServer } from './mcp-direct.js'
import type { PaidCall } from './paid-call/paid-call.js'

const CAPABILITIES = { tools: { listChanged: false } }

/** Bytes of one MCP message, as the HTTP route's body limit; past it the SDK answers 413 with a JSON-RPC error. */
export const MCP_MAX_MESSAGE_BYTES = 1024 * 1024

/**
 * Each published service as an MCP server at /<namespace>/<service>/mcp (Streamable HTTP,
 * stateless: every POST is answered on its own, as JSON): `tools/list` gives its endpoints as
 * tools, `tools/call` runs the paid call's stages between the MCP transport's reading of the call
 * and its rendering of the result, as the HTTP route does for a request. `initialize`,
 * `tools/list` and `tools/call` are answered directly (mcp-direct.ts), byte for byte as the SDK's
 * Server would; every other message is given to a Server and transport of the SDK's built for it
 * (`direct: false`, for tests and bench: every message).
 */
export function mcpRoute(
  paidCall: PaidCall,
  mcp: McpTransport,
  table: Pick<EndpointTable, 'get' | 'service'>,
  opts: { direct?: boolean } = {},
) {
  const tools = new WeakMap<EndpointEntry, Tool>()
  const route: McpRouteState = {
    paidCall,
    mcp,
    table,
    toolOf: (e: EndpointEntry): Tool => {
      let tool = tools.get(e)
      if (!tool) tools.set(e, (tool = describeTool(e)))
      return tool
    },
    // the SDK's Server builds an Ajv instance of its own unless given one (for elicitation, which
    // these servers never send): per message that was most of an MCP call's CPU (bench:mcp)
    jsonSchemaValidator: new AjvJsonSchemaValidator(),
    direct: opts.direct !== false,
  }

  return async function (app: FastifyInstance) {
    // the SDK's transport reads (and bounds) the body itself
    app.removeAllContentTypeParsers()
    app.addContentTypeParser('*', (_req, _payload, done) => done(null))
    app.post('/:namespace/:service/mcp', (request, reply) => serve(route, request, reply))
    // stateless: no standalone SSE stream to open (GET) and no session to end (DELETE)
    app.route({
      method: ['GET', 'DELETE'],
      url: '/:namespace/:service/mcp',
      handler: async (_request, reply) =>
        reply
          .code(405)
          .header('allow', 'POST')
          .send(rpcError(-32000, 'Method not allowed: this MCP server is stateless; send each message as a POST')),
    })
  }
}

/** What the MCP servers of every service share: how a call is paid and sent, the endpoints and their tools. */
interface McpRouteState {
  paidCall: PaidCall
  mcp: McpTransport
  table: Pick<EndpointTable, 'get' | 'service'>
  /** an endpoint's tool, described once */
  toolOf: (e: EndpointEntry) => Tool
  jsonSchemaValidator: AjvJsonSchemaValidator
  /** answer the common messages directly (mcp-direct.ts) */
  direct: boolean
}

/** The service's tools and their call, as both paths answer them. */
class ServiceTools implements McpToolServer {
  readonly serverInfo: Implementation
  readonly capabilities = CAPABILITIES

  constructor(
    private readonly route: McpRouteState,
    private readonly request: FastifyRequest,
    private readonly namespace: string,
    private readonly service: string,
    private readonly endpoints: readonly EndpointEntry[],
  ) {
    this.serverInfo = { name: `${namespace}/${service}`, version: '1.0.0' }
  }

  listTools(): ListToolsResult {
    return { tools: this.endpoints.map(this.route.toolOf) }
  }

  async callTool(params: CallToolRequest['params']): Promise<CallToolResult> {
    const { route, request, namespace, service } = this
    // a tool of the seller's MCP server keeps its own name; an endpoint's tool is its slug
    const entry =
      this.endpoints.find((e) => e.mcpTool === params.name) ??
      route.table.get(`/${namespace}/${service}/${params.name}`)
    const path = entry?.path ?? `/${namespace}/${service}/${params.name}`
    const call = {
      path,
      methods: entry?.methods,
      resourceUrl: entry?.resourceUrl ?? path,
      arguments: params.arguments,
      meta: params._meta as Record<string, unknown> | undefined,
      headers: request.headers,
      log: request.log,
    }
    return route.mcp.send(call, await route.paidCall(route.mcp.request(call)))
  }
}

/** One POST to a service's MCP server: answered directly when it can be, else by the SDK's Server. */
async function serve(route: McpRouteState, request: FastifyRequest, reply: FastifyReply) {
  const { namespace, service } = request.params as Record<string, string>
  const endpoints = route.table.service(namespace, service)
  if (endpoints.length === 0)
    return reply.code(404).send(rpcError(-32000, `no published service /${namespace}/${service}`))

  const toolsServer = new ServiceTools(route, request, namespace, service, endpoints)
  reply.hijack()
  let parsedBody: unknown
  if (route.direct) {
    try {
      const outcome = await answerDirect(request.raw, reply.raw, toolsServer, MCP_MAX_MESSAGE_BYTES)
      if (outcome.answered) return
      parsedBody = outcome.parsedBody
    } catch (err) {
      return internalError(request, reply, err)
    }
  }
  const { serverInfo, capabilities } = toolsServer
  const server = new Server(serverInfo, { capabilities, jsonSchemaValidator: route.jsonSchemaValidator })
  server.setRequestHandler(ListToolsRequestSchema, () => toolsServer.listTools())
  server.setRequestHandler(CallToolRequestSchema, (req) => toolsServer.callTool(req.params))
  const transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    enableJsonResponse: true,
    maxRequestBodySize: MCP_MAX_MESSAGE_BYTES,
  })
  reply.raw.on('close', () => void server.close().catch(() => {}))
  try {
    await server.connect(transport)
    await transport.handleRequest(request.raw, reply.raw, parsedBody)
  } catch (err) {
    internalError(request, reply, err)
  }
}

function internalError(request: FastifyRequest, reply: FastifyReply, err: unknown) {
  request.log.error({ err: (err as Error).message }, 'mcp request failed')
  if (!reply.raw.headersSent)
    reply.raw
      .writeHead(500, { 'content-type': 'application/json' })
      .end(JSON.stringify(rpcError(-32603, 'internal error')))
}

function rpcError(code: number, message: string) {
  return { jsonrpc: '2.0', error: { code, message }, id: null }
}

/** An endpoint as a tool: its slug, its input schema, its price in the description and in `_meta`. */
function describeTool(e: EndpointEntry): Tool {
  const challenge = e.challenges.get(toolMethod(e.methods))!
  const price = `${formatUsdc(e.price)} USDC`
  const schemes = [...new Set(challenge.v2.accepts.map((a) => a.scheme))].join(' or ')
  const schema = (e.inputSchema ?? {}) as Record<string, unknown>
  return {
    name: e.mcpTool ?? e.slug,
    description: `${e.description ? `${e.description.replace(/\.?\s*$/, '.')} ` : ''}Price: ${price} per call, paid with x402 (${schemes}, ${challenge.requirementsV2.network}).`,
    inputSchema: { ...schema, type: 'object' } as Tool['inputSchema'],
    _meta: {
      'tollgate/price': {
        usdc: formatUsdc(e.price),
        amount: e.price.toString(),
        asset: challenge.requirementsV2.asset,
        network: challenge.requirementsV2.network,
      },
      'x402/payment-requirements': challenge.v2.accepts,
    },
  }
}

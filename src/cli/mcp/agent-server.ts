/**
 * The MCP server of `tollgate mcp`: the agent tools (agent-tools.ts), each call's arguments
 * checked against the tool's schema first. Whatever a call meets (bad arguments, an unknown tool,
 * a refusal, an unreachable host) is a tool error, never a JSON-RPC error or a crash.
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { CallToolRequestSchema, ListToolsRequestSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import { Ajv, type ValidateFunction } from 'ajv'
import type { AgentTool } from './agent-tools.js'
import type { McpSession } from './session.js'
import { errorResult, toolError } from './tool-results.js'

export const SERVER_INFO = { name: 'tollgate', version: '1.0.0' }

export function createAgentServer(session: McpSession, tools: AgentTool[]): Server {
  const ajv = new Ajv({ allErrors: true, strict: false })
  const byName = new Map<string, { tool: AgentTool; validate: ValidateFunction }>(
    tools.map((t) => [t.name, { tool: t, validate: ajv.compile(t.inputSchema) }]),
  )
  const server = new Server(SERVER_INFO, {
    capabilities: { tools: { listChanged: false } },
    instructions:
      "Pay-per-call APIs (x402) paid from this agent's Tollgate wallet. Find one with search_marketplace, check its price and input with describe_endpoint, then call_endpoint (HTTP), call_mcp_tool (a paid MCP server) or call_agent (a paid A2A agent's skill). Every paid result ends with what it cost; budget shows what is left.",
  })
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: tools.map(({ run: _run, ...t }) => t) }))
  server.setRequestHandler(CallToolRequestSchema, async (req, extra): Promise<CallToolResult> => {
    const entry = byName.get(req.params.name)
    if (!entry)
      return toolError(
        'unknown_tool',
        `no tool "${req.params.name}"; the tools are ${tools.map((t) => t.name).join(', ')}`,
      )
    const args = req.params.arguments ?? {}
    if (!entry.validate(args)) {
      const problems = (entry.validate.errors ?? []).map(
        (e) =>
          `${e.instancePath || 'arguments'} ${e.message}${e.params && 'additionalProperty' in e.params ? ` (${String(e.params.additionalProperty)})` : ''}`,
      )
      return toolError('invalid_arguments', `bad arguments for ${entry.tool.name}: ${problems.join('; ')}`, {
        toFix: `send arguments that match its input schema: ${JSON.stringify(entry.tool.inputSchema)}`,
      })
    }
    try {
      return await entry.tool.run(args, session, extra.signal)
    } catch (err) {
      return errorResult(err, session.settings)
    }
  })
  return server
}

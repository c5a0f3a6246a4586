/**
 * `tollgate mcp --remote <url>`: a paid MCP server's tools as local ones (the paying proxy). The
 * list is the remote's own; a call is forwarded, and when it asks for payment the agent's
 * platform wallet pays (caps and allowlist enforced there) and it is made once more with the
 * payment. The result is the remote's, with what it cost appended; refusals are tool errors.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { CallToolRequestSchema, ListToolsRequestSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import { callPaidTool } from '../../client/pay-mcp-tool.js'
import type { McpSession } from './session.js'
import { errorResult, withCost } from './tool-results.js'

export function createRemoteServer(session: McpSession, remote: Client, url: string): Server {
  const info = remote.getServerVersion()
  const server = new Server(
    { name: `tollgate → ${info?.name ?? url}`, version: info?.version ?? '1.0.0' },
    {
      capabilities: { tools: { listChanged: false } },
      instructions: `The tools of the paid MCP server ${url}; each call is paid from this agent's Tollgate wallet (within its spend caps and allowlist) and its result ends with what it cost.${remote.getInstructions() ? `\n\n${remote.getInstructions()}` : ''}`,
    },
  )
  server.setRequestHandler(ListToolsRequestSchema, async (req, extra) =>
    remote.listTools(req.params, { signal: extra.signal }),
  )
  server.setRequestHandler(CallToolRequestSchema, async (req, extra): Promise<CallToolResult> => {
    try {
      const { result, payment, signedIn } = await callPaidTool(
        remote,
        session.payer(),
        { name: req.params.name, arguments: req.params.arguments ?? {} },
        { signal: extra.signal, serverUrl: url, paidAccess: session.paidAccess },
      )
      return withCost(result, payment, signedIn)
    } catch (err) {
      return errorResult(err, session.settings)
    }
  })
  return server
}

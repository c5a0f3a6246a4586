/**
 * `tollgate mcp`: an MCP server on stdio for agent hosts (Claude Desktop, Cursor, any MCP client),
 * paying from the agent's platform wallet with the agent key of the context (or
 * TOLLGATE_AGENT_KEY). Without --remote it serves the agent tools (mcp/agent-tools.ts); with
 * `--remote <url>` it serves that paid MCP server's tools and pays their challenges. stdout carries
 * only the protocol; what it has to say goes to stderr (hosts keep it in their logs).
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js'
import { parseOptions, type Command } from '../command.js'
import { redactSecrets, UnreachableError, UsageError } from '../errors.js'
import { EXIT } from '../exit-codes.js'
import { createAgentServer } from '../mcp/agent-server.js'
import { AGENT_TOOLS } from '../mcp/agent-tools.js'
import { createRemoteServer } from '../mcp/remote-server.js'
import { CLIENT_INFO, McpSession } from '../mcp/session.js'
import { approvalTimeoutMs } from './fetch.js'
import { mcpInstallCommand } from './mcp-install.js'

export const MCP_HELP = `usage: tollgate mcp [--remote <url>] [--upto] [--no-batch]

An MCP server on stdio for agent hosts (Claude Desktop, Cursor, any MCP client), paying from the
agent's platform wallet within its spend caps and allowlist. It uses the agent key and API address
of the context (--context, TOLLGATE_CONTEXT) or of TOLLGATE_AGENT_KEY and TOLLGATE_API_URL.

tools:
  search_marketplace     paid endpoints by what they do, with prices and call_endpoint arguments
  describe_endpoint      an endpoint's (or a paid MCP tool's) price and input schema; pays nothing
  call_endpoint          call an x402 HTTP endpoint, paying its price
  call_mcp_tool          call a tool of a paid MCP server, paying its price
  call_agent             call a skill of a paid A2A agent (its Agent Card URL), paying its price
  budget                 the agent's balance, cap headroom and spending
Every paid result ends with what it cost. A refusal (cap, allowlist, balance) is a tool error
saying what to do; nothing is paid. Where a paid MCP server gives paid access (x402
sign-in-with-x), a tool paid for once in this session signs in from the agent wallet on the next
call instead of paying, until the access runs out.

options:
  --remote URL           serve the tools of the paid MCP server at URL (Streamable HTTP) instead,
                         paying each call's price: the host sees that server's tools
  --upto                 pay a seller's usage-based price (x402 upto) where offered: the maximum is
                         reserved against the caps, the actual charge is paid; exact elsewhere
  --no-batch             do not pay through batch-settlement channels: by default an endpoint of
                         this platform that offers one beside exact is paid through it (one deposit
                         from the agent wallet, at most the owner's spend_caps.channel_deposit,
                         default 100 x the price, then a signed cumulative voucher per call; exact
                         where that deposit cannot be made); a seller elsewhere is never paid so
  --approval-timeout S   a payment the agent's policy holds for its owner's approval waits up to S
                         seconds for the decision (default 600; 0: the tool answers at once that
                         it waits), with a line on stderr, then is paid
  -h, --help             this help

subcommands:
  install --client claude|cursor|vscode [--agent NAME] [--config PATH]
                         add this server to the host's MCP configuration (merged, backup kept),
                         with a new agent key made for it
  uninstall --client claude|cursor|vscode [--config PATH]
                         remove exactly what install added

stdout carries only the protocol; messages go to stderr. Host configuration: README, "Agent hosts".
`

export async function mcpCommand(args: string[], cmd: Command): Promise<number> {
  if (args[0] === 'install' || args[0] === 'uninstall') return mcpInstallCommand(args[0], args.slice(1), cmd)
  const { values: v } = parseOptions(
    args,
    {
      remote: { type: 'string' },
      upto: { type: 'boolean' },
      'no-batch': { type: 'boolean' },
      'approval-timeout': { type: 'string' },
    },
    MCP_HELP,
  )
  if (v.help) {
    cmd.io.stdout(MCP_HELP)
    return EXIT.ok
  }
  const remoteUrl = v.remote === undefined ? undefined : URL.parse(v.remote)
  if (remoteUrl === null || (remoteUrl && remoteUrl.protocol !== 'http:' && remoteUrl.protocol !== 'https:'))
    throw new UsageError(`--remote is the http(s) URL of an MCP server, got "${v.remote}"`)
  const log = (line: string) => cmd.io.stderr(redactSecrets(`tollgate mcp: ${line}\n`))
  const session = new McpSession(cmd, {
    upto: v.upto === true,
    ...(v['no-batch'] ? { batch: false } : {}),
    approvalTimeoutMs: approvalTimeoutMs(v['approval-timeout']),
    log,
  })
  if (!session.settings.agentKey)
    log('no agent key: the tools that pay refuse until there is one (TOLLGATE_AGENT_KEY, or tollgate setup)')

  let server: Server
  if (remoteUrl) {
    const remote = new Client(CLIENT_INFO)
    try {
      await remote.connect(new StreamableHTTPClientTransport(remoteUrl, { fetch: session.fetch }))
    } catch (err) {
      throw new UnreachableError(`cannot connect to the MCP server at ${remoteUrl.href}: ${(err as Error).message}`)
    }
    server = createRemoteServer(session, remote, remoteUrl.href)
    server.onclose = () => void remote.close().catch(() => {})
    log(`serving the tools of ${remoteUrl.href}, paid from the agent wallet (API ${session.settings.apiUrl})`)
  } else {
    server = createAgentServer(session, AGENT_TOOLS)
    log(`serving ${AGENT_TOOLS.length} tools (API ${session.settings.apiUrl})`)
  }

  const closed = new Promise<void>((resolve) => {
    const prior = server.onclose
    server.onclose = () => {
      prior?.()
      resolve()
    }
  })
  await server.connect(new StdioServerTransport())
  // the host ends the session by closing stdin (or with a signal)
  const stop = () => void server.close().catch(() => {})
  process.stdin.once('end', stop)
  process.once('SIGINT', stop)
  process.once('SIGTERM', stop)
  await closed
  process.off('SIGINT', stop)
  process.off('SIGTERM', stop)
  await session.close()
  return EXIT.ok
}

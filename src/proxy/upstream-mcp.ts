/**
 * A seller's upstream MCP server (Streamable HTTP), as the proxy and publishing reach it: through
 * the same SSRF-guarded connections as HTTP upstreams, every request carrying the seller's
 * forwarded headers and an `X-Tollgate-Signature` over its method, path and JSON-RPC body (as
 * upstream.ts signs a forwarded HTTP request), and on a paid call `X-Tollgate-Payment-Id`.
 * One MCP session per call (initialize, the request, close): nothing is held between calls.
 */
import { isIP } from 'node:net'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js'
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv'
import { Agent, fetch as undiciFetch } from 'undici'
import { guardedLookup, isPrivateAddress } from '../net/ssrf-guard.js'
export { MCP_TOOL_RESULT_TYPE } from '../transports/mcp.js'
import { FORWARD_TIMEOUT_MS, signUpstreamRequest, type UpstreamOptions } from './upstream.js'

const CLIENT_INFO = { name: 'tollgate-proxy', version: '1.0.0' }

export function createUpstreamMcpClient(opts: { allowPrivate?: boolean; connections?: number } = {}) {
  const allowPrivate = opts.allowPrivate ?? false
  // one for every session: the SDK's Client builds an Ajv instance of its own unless given one
  const jsonSchemaValidator = new AjvJsonSchemaValidator()
  const agent = new Agent({
    connections: opts.connections ?? 64,
    keepAliveTimeout: 10_000,
    connect: { lookup: guardedLookup(allowPrivate) },
  })

  /** fetch for one session: guarded, signed, with the seller's headers */
  const signedFetch =
    (options: UpstreamOptions, paymentId: string | undefined) =>
    async (input: string | URL | Request, init?: RequestInit) => {
      const url = new URL(input instanceof Request ? input.url : input)
      const host = url.hostname.replace(/^\[|\]$/g, '')
      if (!allowPrivate && isIP(host) && isPrivateAddress(host))
        throw Object.assign(new Error(`refused: ${host} is a private address`), { code: 'ESSRF' })
      const method = (init?.method ?? 'GET').toUpperCase()
      const body = typeof init?.body === 'string' ? Buffer.from(init.body) : undefined
      const headers = new Headers(init?.headers)
      for (const [k, v] of Object.entries(options.headers ?? {})) headers.set(k, v)
      if (paymentId) headers.set('x-tollgate-payment-id', paymentId)
      if (options.signingSecret)
        headers.set(
          'x-tollgate-signature',
          signUpstreamRequest(options.signingSecret, method, url.pathname + url.search, body),
        )
      return undiciFetch(url, {
        ...(init as object),
        headers: Object.fromEntries(headers.entries()),
        dispatcher: agent,
      } as never) as unknown as Promise<Response>
    }

  async function session<T>(
    url: string,
    options: UpstreamOptions,
    paymentId: string | undefined,
    run: (c: Client, timeout: number) => Promise<T>,
  ): Promise<T> {
    const timeout = options.timeoutMs ?? FORWARD_TIMEOUT_MS
    const client = new Client(CLIENT_INFO, { jsonSchemaValidator })
    await client.connect(new StreamableHTTPClientTransport(new URL(url), { fetch: signedFetch(options, paymentId) }), {
      timeout,
    })
    try {
      return await run(client, timeout)
    } finally {
      await client.close().catch(() => {})
    }
  }

  return {
    /** The server's tools, every page. */
    listTools: (url: string, options: UpstreamOptions) =>
      session(url, options, undefined, async (c, timeout) => {
        const tools: Tool[] = []
        let cursor: string | undefined
        do {
          const page = await c.listTools(cursor ? { cursor } : undefined, { timeout })
          tools.push(...page.tools)
          cursor = page.nextCursor
        } while (cursor && tools.length < 1000)
        return tools
      }),
    /** One paid `tools/call`; throws when the server cannot be reached or answers with a JSON-RPC error. */
    callTool: (p: {
      url: string
      tool: string
      arguments: Record<string, unknown>
      options: UpstreamOptions
      paymentId: string
    }) =>
      session(
        p.url,
        p.options,
        p.paymentId,
        async (c, timeout) =>
          (await c.callTool({ name: p.tool, arguments: p.arguments }, undefined, { timeout })) as CallToolResult,
      ),
    close: () => agent.close(),
  }
}

export type UpstreamMcpClient = ReturnType<typeof createUpstreamMcpClient>

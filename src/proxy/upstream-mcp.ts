/**
 * A seller's upstream MCP server (Streamable HTTP), as the proxy and publishing reach it: through
 * the same SSRF-guarded connections as HTTP upstreams, every request carrying the seller's
 * forwarded headers and an `X-Tollgate-Signature` over its method, path and JSON-RPC body (as
 * upstream.ts signs a forwarded HTTP request), and on a paid call `X-Tollgate-Payment-Id`.
 *
 * Paid tool calls share one MCP session per server (per URL, forwarded headers and signing
 * secret): initialize once, then each call is one POST. A server that hands out no session id
 * (stateless) is called the same way, without the id. A session the server no longer knows or
 * refuses (HTTP 404, or 400 naming the session: the server did not run the call) is dropped and
 * the call made once more on a new one; the paid-call stages see only that final outcome, so a
 * call is charged at most once. The proxy never opens the standalone GET event stream (it answers
 * no server-to-client requests): a held session is requests only, nothing is left open. Listing
 * tools (publishing) opens a session of its own and closes it.
 */
import { AsyncLocalStorage } from 'node:async_hooks'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { McpError, type CallToolResult, type Tool } from '@modelcontextprotocol/sdk/types.js'
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv'
import { Agent } from 'undici'
import { guardedLookup } from '../net/ssrf-guard.js'
export { MCP_TOOL_RESULT_TYPE } from '../transports/mcp.js'
import { FORWARD_TIMEOUT_MS, sellerFetch, type UpstreamOptions } from './upstream.js'

const CLIENT_INFO = { name: 'tollgate-proxy', version: '1.0.0' }
/** Sessions held open at once; past it the least recently used is closed. */
const MAX_SESSIONS = 256
/** How long closing waits for a server to acknowledge a session's end (DELETE) before giving up on it. */
const END_SESSION_MS = 1_000

/** A session being opened or open, and whether it was ended. */
interface Opened {
  client: Promise<Client>
  transport: StreamableHTTPClientTransport
  ended?: boolean
}

/** A session held for paid calls, and the calls using it now. */
interface Held extends Opened {
  calls: number
  dropped: boolean
}

/**
 * fetch for one session: guarded, signed, with the seller's headers (and the payment id of the
 * call a request is made for, if any).
 */
const signedFetchFor =
  (agent: Agent, allowPrivate: boolean, paymentIdNow: () => string | undefined) =>
  (options: UpstreamOptions) =>
  async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const method = (init?.method ?? 'GET').toUpperCase()
    // the standalone event stream (server-to-client messages): not wanted, so never opened;
    // 405 is the answer the SDK takes as "this server offers none"
    if (method === 'GET') return new Response(null, { status: 405 })
    return sellerFetch(agent, allowPrivate, options, paymentIdNow(), input, init)
  }

export function createUpstreamMcpClient(opts: { allowPrivate?: boolean; connections?: number } = {}) {
  const allowPrivate = opts.allowPrivate ?? false
  // one for every session: the SDK's Client builds an Ajv instance of its own unless given one
  const jsonSchemaValidator = new AjvJsonSchemaValidator()
  const agent = new Agent({
    connections: opts.connections ?? 64,
    keepAliveTimeout: 10_000,
    connect: { lookup: guardedLookup(allowPrivate) },
  })

  // the payment id of the call a shared session's request is made for
  const callPaymentId = new AsyncLocalStorage<string>()

  const signedFetch = signedFetchFor(agent, allowPrivate, () => callPaymentId.getStore())

  /** A new session: initialized, its requests carrying a payment id only on a call's behalf. */
  function open(url: string, options: UpstreamOptions): Opened {
    const transport = new StreamableHTTPClientTransport(new URL(url), { fetch: signedFetch(options) })
    const client = new Client(CLIENT_INFO, { jsonSchemaValidator })
    const ready = callPaymentId.exit(() =>
      client.connect(transport, { timeout: options.timeoutMs ?? FORWARD_TIMEOUT_MS }).then(() => client),
    )
    return { client: ready, transport }
  }

  const pool = new SessionPool(open)

  return {
    /** The server's tools, every page. */
    listTools: (url: string, options: UpstreamOptions) => inOwnSession(open, url, options, allTools),
    /** One paid `tools/call`; throws when the server cannot be reached or answers with a JSON-RPC error. */
    callTool: (p: {
      url: string
      tool: string
      arguments: Record<string, unknown>
      options: UpstreamOptions
      paymentId: string
    }) =>
      pool.call(p.url, p.options, async (c, timeout) =>
        callPaymentId.run(
          p.paymentId,
          async () =>
            (await c.callTool({ name: p.tool, arguments: p.arguments }, undefined, { timeout })) as CallToolResult,
        ),
      ),
    /** Ends every held session, then the connections. */
    close: async () => {
      await pool.close()
      await agent.close()
    },
  }
}

/**
 * Ends a session: tells a server that gave it an id (DELETE, as the spec asks of a client done
 * with one; waited for at most END_SESSION_MS), then closes the client and its transport, which
 * aborts anything of it still in flight. Once only.
 */
async function endSession(s: Opened): Promise<void> {
  if (s.ended) return
  s.ended = true
  const { client, transport } = s
  const c = await client.catch(() => undefined)
  if (c && transport.sessionId) {
    let timer: NodeJS.Timeout | undefined
    await Promise.race([
      transport.terminateSession().catch(() => {}),
      new Promise<void>((r) => (timer = setTimeout(r, END_SESSION_MS))),
    ])
    clearTimeout(timer)
  }
  await (c ?? transport).close().catch(() => {})
}

/** A session of its own for one piece of work (publishing), ended after it. */
async function inOwnSession<T>(
  open: (url: string, options: UpstreamOptions) => Opened,
  url: string,
  options: UpstreamOptions,
  run: (c: Client, timeout: number) => Promise<T>,
): Promise<T> {
  const opened = open(url, options)
  try {
    return await run(await opened.client, options.timeoutMs ?? FORWARD_TIMEOUT_MS)
  } finally {
    await endSession(opened)
  }
}

/** The server's tools, every page (at most 1000 or so). */
async function allTools(c: Client, timeout: number): Promise<Tool[]> {
  const tools: Tool[] = []
  let cursor: string | undefined
  do {
    const page = await c.listTools(cursor ? { cursor } : undefined, { timeout })
    tools.push(...page.tools)
    cursor = page.nextCursor
  } while (cursor && tools.length < 1000)
  return tools
}

/** A paid call's session: by server (URL, forwarded headers, signing secret). */
function sessionKey(url: string, o: UpstreamOptions): string {
  return JSON.stringify([url, o.headers ?? {}, o.signingSecret ?? null])
}

/**
 * The server does not know the session (expired, restarted: 404) or refuses it (400 naming the
 * session, as the SDK's server answers a missing or unknown id): the call was not run.
 */
function sessionRefused(err: unknown): boolean {
  return err instanceof StreamableHTTPError && (err.code === 404 || (err.code === 400 && /session/i.test(err.message)))
}

/**
 * The MCP sessions paid calls share, one per server (URL, forwarded headers, signing secret), the
 * least recently used dropped past MAX_SESSIONS. A dropped session is ended once no call uses it.
 */
class SessionPool {
  /** By server; a Map's order is its use order (least recent first). */
  private readonly sessions = new Map<string, Held>()

  constructor(private readonly open: (url: string, options: UpstreamOptions) => Opened) {}

  /** One call on the server's session; made once more on a new session when a held one is refused. */
  async call<T>(url: string, options: UpstreamOptions, run: (c: Client, timeout: number) => Promise<T>): Promise<T> {
    const timeout = options.timeoutMs ?? FORWARD_TIMEOUT_MS
    const key = sessionKey(url, options)
    for (let retried = false; ; retried = true) {
      const { held, fresh } = this.take(key, url, options)
      held.calls++
      try {
        return await run(await held.client, timeout)
      } catch (err) {
        // the session was refused: a new one, once (not when this call just opened it)
        if (!fresh && !retried && sessionRefused(err)) {
          this.drop(key, held)
          continue
        }
        // a JSON-RPC error (the tool's, a timeout) leaves the session as it was; anything else ends it
        if (!(err instanceof McpError)) this.drop(key, held)
        throw err
      } finally {
        if (--held.calls === 0 && held.dropped) void endSession(held)
      }
    }
  }

  /** Ends every session, in use or not (the proxy is closing). */
  async close(): Promise<void> {
    const all = [...this.sessions.values()]
    this.sessions.clear()
    for (const h of all) h.dropped = true
    await Promise.allSettled(all.map((h) => endSession(h)))
  }

  /** The server's held session, or a new one (`fresh`). */
  private take(key: string, url: string, options: UpstreamOptions): { held: Held; fresh: boolean } {
    const { sessions } = this
    const found = sessions.get(key)
    if (found) {
      sessions.delete(key)
      sessions.set(key, found)
      return { held: found, fresh: false }
    }
    const held: Held = { ...this.open(url, options), calls: 0, dropped: false }
    sessions.set(key, held)
    // one that fails to open is dropped as it fails
    held.client.catch(() => this.drop(key, held))
    if (sessions.size > MAX_SESSIONS) {
      const oldest = sessions.keys().next().value!
      this.drop(oldest, sessions.get(oldest)!)
    }
    return { held, fresh: true }
  }

  private drop(key: string, held: Held): void {
    if (this.sessions.get(key) === held) this.sessions.delete(key)
    if (held.dropped) return
    held.dropped = true
    if (held.calls === 0) void endSession(held)
  }
}

export type UpstreamMcpClient = ReturnType<typeof createUpstreamMcpClient>

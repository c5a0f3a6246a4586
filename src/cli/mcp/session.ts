/**
 * What the tools of one `tollgate mcp` process share: the context's settings and API, the fetch
 * that names an unreachable host, the agent key (asked for only by the tools that pay), one MCP
 * client per remote server, connected on first use and closed with the session, and the paid MCP
 * resources that offered sign-in (x402 `sign-in-with-x`: the next call there signs in instead).
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import {
  platformPayer,
  wrapFetch,
  type FetchLike,
  type Payer,
  type PlatformPayOptions,
} from '../../client/wrap-fetch.js'
import { namingFetch, NO_AGENT_KEY, type Api } from '../api-client.js'
import type { Command } from '../command.js'
import { UsageError } from '../errors.js'
import type { Settings } from '../settings.js'

export const CLIENT_INFO = { name: 'tollgate-mcp', version: '1.0.0' }

export class McpSession {
  readonly settings: Settings
  readonly api: Api
  readonly fetch: FetchLike
  /** pay a seller's usage-based `upto` requirement where offered (`--upto`) */
  readonly upto: boolean
  /** batch-settlement on this platform's own endpoints: by default (undefined); `false` opts out (`--no-batch`) */
  readonly batch: boolean | undefined
  /** MCP resources paid for where sign-in was offered (callPaidTool's `paidAccess`) */
  readonly paidAccess = new Set<string>()
  readonly #clients = new Map<string, Promise<Client>>()
  #payer: Payer | undefined
  #paidFetch: ReturnType<typeof wrapFetch> | undefined

  /** waiting for the owner's decision on a held payment (`--approval-timeout`); none: refused at once */
  readonly #approval: PlatformPayOptions['approval']

  constructor(
    cmd: Command,
    opts: { upto?: boolean; batch?: boolean; approvalTimeoutMs?: number; log?(line: string): void } = {},
  ) {
    this.upto = opts.upto ?? false
    this.batch = opts.batch
    const shown = new Map<string, number>()
    this.#approval =
      opts.approvalTimeoutMs && opts.approvalTimeoutMs > 0
        ? {
            timeoutMs: opts.approvalTimeoutMs,
            // a progress line on stderr (the host's log): when the wait starts, then every 10 s
            onProgress: (status, id) => {
              if (Date.now() - (shown.get(id) ?? 0) < 10_000) return
              shown.set(id, Date.now())
              opts.log?.(status)
            },
          }
        : undefined
    this.settings = cmd.settings()
    this.api = cmd.api()
    this.fetch = namingFetch(cmd.io.fetch ?? fetch, this.settings.apiUrl, this.settings.apiUrlSource)
  }

  /** The agent key; a tool that pays without one is refused with how to get one. */
  agentKey(): string {
    if (!this.settings.agentKey) throw new UsageError(NO_AGENT_KEY)
    return this.settings.agentKey
  }

  /** The platform signing from the agent's wallet. */
  payer(): Payer {
    return (this.#payer ??= platformPayer(this.fetch, {
      baseUrl: this.settings.apiUrl,
      agentKey: this.agentKey(),
      ...(this.upto ? { upto: true } : {}),
      ...(this.batch !== undefined ? { batchSettlement: this.batch } : {}),
      ...(this.#approval ? { approval: this.#approval } : {}),
    }))
  }

  /**
   * The paying fetch of `call_endpoint`: one for the session, so an endpoint it paid where sign-in
   * was offered is signed in to on the next call, as with `tollgate fetch` in one process.
   */
  paidFetch(): ReturnType<typeof wrapFetch> {
    return (this.#paidFetch ??= wrapFetch(this.fetch, {
      baseUrl: this.settings.apiUrl,
      agentKey: this.agentKey(),
      ...(this.upto ? { upto: true } : {}),
      ...(this.batch !== undefined ? { batchSettlement: this.batch } : {}),
      ...(this.#approval ? { approval: this.#approval } : {}),
    }))
  }

  /** An MCP client connected to the Streamable HTTP server at `url` (one per URL; a failed connection is tried again next time). */
  mcp(url: string): Promise<Client> {
    let c = this.#clients.get(url)
    if (!c) {
      const client = new Client(CLIENT_INFO)
      c = client.connect(new StreamableHTTPClientTransport(new URL(url), { fetch: this.fetch })).then(() => client)
      c.catch(() => this.#clients.delete(url))
      this.#clients.set(url, c)
    }
    return c
  }

  async close(): Promise<void> {
    const clients = [...this.#clients.values()]
    this.#clients.clear()
    await Promise.all(clients.map((c) => c.then((x) => x.close()).catch(() => {})))
  }
}

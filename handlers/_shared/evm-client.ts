/**
 * The JSON-RPC client of the on-chain data handlers (evm-*): a viem public client whose every
 * request goes through `callProvider`, so time and size are bounded, an unreachable or failing
 * node is 502 upstream_failed, and the node's URL (which may carry an API key) never appears in
 * a message. JSON-RPC errors (a revert, an unknown method) reach viem unchanged, as with its own
 * http transport, so viem still decodes revert reasons.
 *
 * @example
 *   const { viem, client, read } = await chainClient(ctx)
 *   const block = await read('the latest block', () => client.getBlockNumber())
 */
import { HandlerInputError, HandlerUpstreamError, type HandlerContext } from '../../src/pool/handler-contract.js'
import { callProvider, providerSetting } from './outbound.js'

/** The setting every chain-reading handler needs: a JSON-RPC URL (production: Base mainnet). */
export const CHAIN_DATA_RPC_URL = 'CHAIN_DATA_RPC_URL'

type Viem = typeof import('viem')

export interface ChainClientOptions {
  /** the provider setting holding the RPC URL, default CHAIN_DATA_RPC_URL */
  setting?: string
  /** for the 503 message */
  what?: string
  /** per-request limits; eth_getLogs answers can be large */
  timeoutMs?: number
  maxBytes?: number
  /**
   * ERC-3668 (CCIP-Read) gateway requests: false (the default) refuses offchain lookups; a
   * function performs them (ens-* passes one that goes through fetchPublicUrl).
   */
  ccipRequest?:
    false | ((p: { data: `0x${string}`; sender: `0x${string}`; urls: readonly string[] }) => Promise<`0x${string}`>)
}

/** What chainClient gives: viem itself (loaded lazily), the client, `read` and the setting used. */
export interface ChainClient {
  viem: Viem
  client: import('viem').PublicClient
  read<T>(what: string, fn: () => Promise<T>): Promise<T>
  setting: string
}

/** A viem public client on the configured RPC, plus `read`, which turns any failure into a clear 502. */
export async function chainClient(ctx: HandlerContext, opts: ChainClientOptions = {}): Promise<ChainClient> {
  const setting = opts.setting ?? CHAIN_DATA_RPC_URL
  const url = providerSetting(ctx, setting, opts.what ?? 'this endpoint')
  if (!/^https?:\/\//i.test(url))
    throw new HandlerUpstreamError('upstream_not_configured', `${setting} must be an http(s) JSON-RPC URL`)
  const viem = await import('viem')
  let id = 0
  const transport = viem.custom(
    {
      async request({ method, params }: { method: string; params?: unknown }) {
        const body = { jsonrpc: '2.0', id: ++id, method, params: params ?? [] }
        // some nodes answer JSON-RPC errors with HTTP 4xx/5xx: the body decides when it is JSON-RPC
        const res = await callProvider('the chain RPC', url, {
          body,
          timeoutMs: opts.timeoutMs ?? 10_000,
          maxBytes: opts.maxBytes ?? 16 * 1024 * 1024,
          acceptStatus: [400, 404, 405, 422, 500],
        })
        const j = res.json as
          { result?: unknown; error?: { code: number; message: string; data?: unknown } } | undefined
        if (j && typeof j === 'object' && j.error && typeof j.error === 'object')
          throw new viem.RpcRequestError({ body, error: j.error, url: 'the chain RPC' })
        if (res.status >= 300 || !j || typeof j !== 'object' || !('result' in j))
          throw new HandlerUpstreamError(
            'upstream_failed',
            `the chain RPC answered ${res.status >= 300 ? `HTTP ${res.status}` : 'something that is not JSON-RPC'} to ${method}`,
          )
        return j.result
      },
    },
    { retryCount: 0 },
  )
  // viem's own CCIP-Read fetches any URL a contract names: never with the default fetch
  const client = viem.createPublicClient({
    transport,
    ccipRead: opts.ccipRequest ? { request: opts.ccipRequest } : false,
  })

  /** Runs one read; a failure becomes 502 naming what was read (never the URL). */
  async function read<T>(what: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn()
    } catch (err) {
      throw upstreamError(viem, err, what)
    }
  }
  return { viem, client, read, setting }
}

/** The HandlerUpstreamError inside a viem error (from the transport), or a 502 naming the read. */
export function upstreamError(viem: Viem, err: unknown, what: string): Error {
  if (err instanceof HandlerUpstreamError || err instanceof HandlerInputError) return err
  if (err instanceof viem.BaseError) {
    const inner = err.walk((e) => e instanceof HandlerUpstreamError)
    if (inner instanceof HandlerUpstreamError) return inner
  }
  return new HandlerUpstreamError('upstream_failed', `the chain RPC failed while reading ${what}`)
}

/**
 * A 0x address from the buyer, checksummed; 400 on `field` when it is not one, or when it has
 * mixed case that is not a valid EIP-55 checksum (a likely typo).
 */
export function parseAddress(viem: Viem, raw: string, field: string): `0x${string}` {
  const s = raw.trim()
  if (!/^0x[0-9a-fA-F]{40}$/.test(s))
    throw new HandlerInputError(field, `${field} must be a 0x-prefixed 20-byte hex address`)
  const hex = s.slice(2)
  if (/[a-f]/.test(hex) && /[A-F]/.test(hex) && !viem.isAddress(s, { strict: true })) {
    throw new HandlerInputError(
      field,
      `${field} has mixed case but is not a valid EIP-55 checksum; send it all lower-case or correctly checksummed`,
    )
  }
  return viem.getAddress(s)
}

/** JSON Schema of an address input. */
export const addressSchema = (description: string) => ({ type: 'string', pattern: '^0x[0-9a-fA-F]{40}$', description })

/** A block's time as ISO 8601. */
export const isoTime = (seconds: bigint | number) => new Date(Number(seconds) * 1000).toISOString()

/** Inclusive [from, to] ranges of at most `chunk` blocks covering fromBlock..toBlock. */
export function blockChunks(fromBlock: bigint, toBlock: bigint, chunk: bigint): Array<[bigint, bigint]> {
  const out: Array<[bigint, bigint]> = []
  for (let a = fromBlock; a <= toBlock; a += chunk) out.push([a, a + chunk - 1n < toBlock ? a + chunk - 1n : toBlock])
  return out
}

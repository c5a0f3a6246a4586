/**
 * A bounded eth_getLogs scan, newest blocks first: chunks of at most `chunkBlocks`, halved when
 * the node refuses a chunk as too large (or its answer is over the size cap), and stopped by a
 * request budget, a log budget or a deadline. The answer says exactly which blocks were covered.
 */
import { HandlerUpstreamError } from '../../src/pool/handler-contract.js'
import { optionalSetting } from './outbound.js'
import type { HandlerContext } from '../../src/pool/handler-contract.js'
import type { ChainClient } from './evm-client.js'

/** Optional setting: the largest block range asked of eth_getLogs at once (providers cap it). */
export const LOG_CHUNK_SETTING = 'CHAIN_DATA_LOG_CHUNK_BLOCKS'
export const DEFAULT_LOG_CHUNK_BLOCKS = 2_000n

export function logChunkBlocks(ctx: HandlerContext): bigint {
  const v = optionalSetting(ctx, LOG_CHUNK_SETTING)
  return v && /^[1-9]\d{0,6}$/.test(v) ? BigInt(v) : DEFAULT_LOG_CHUNK_BLOCKS
}

export interface LogScanOptions<L> {
  fromBlock: bigint
  toBlock: bigint
  chunkBlocks: bigint
  maxRequests: number
  /** stop once this many logs were seen (the chunk that crosses it is kept whole) */
  maxLogs: number
  deadlineMs: number
  /** one eth_getLogs over [a, b] */
  fetch(a: bigint, b: bigint): Promise<L[]>
  /** receives each chunk's logs, newest chunk first */
  onLogs(logs: L[]): void
  /** true once the caller has all it needs (the scan then stops with 'result-limit') */
  enough?(): boolean
}

export interface LogScanResult {
  /** the covered range: scannedFrom..toBlock; equal to the asked range when complete */
  scannedFrom: bigint
  toBlock: bigint
  requestedFrom: bigint
  complete: boolean
  /** why the scan stopped early, when it did */
  stoppedBecause: 'log-limit' | 'request-limit' | 'time-limit' | 'result-limit' | null
  requests: number
  logs: number
}

/** Scans toBlock down to fromBlock; see the module comment. */
export async function scanLogs<L>(c: ChainClient, o: LogScanOptions<L>): Promise<LogScanResult> {
  const deadline = Date.now() + o.deadlineMs
  let cursor = o.toBlock
  let chunk = o.chunkBlocks < 1n ? 1n : o.chunkBlocks
  let requests = 0
  let logs = 0
  let stoppedBecause: LogScanResult['stoppedBecause'] = null
  while (cursor >= o.fromBlock) {
    if (o.enough?.()) stoppedBecause = 'result-limit'
    else if (logs >= o.maxLogs) stoppedBecause = 'log-limit'
    else if (requests >= o.maxRequests) stoppedBecause = 'request-limit'
    else if (Date.now() > deadline) stoppedBecause = 'time-limit'
    if (stoppedBecause) break
    const a = cursor - chunk + 1n > o.fromBlock ? cursor - chunk + 1n : o.fromBlock
    requests++
    let got: L[]
    try {
      got = await o.fetch(a, cursor)
    } catch (err) {
      if (chunk > 1n && tooLarge(c, err)) {
        chunk = chunk / 2n
        continue
      }
      throw err instanceof HandlerUpstreamError
        ? err
        : new HandlerUpstreamError('upstream_failed', 'the chain RPC failed while reading logs (eth_getLogs)')
    }
    logs += got.length
    o.onLogs(got)
    cursor = a - 1n
  }
  const scannedFrom = cursor + 1n
  return {
    scannedFrom,
    toBlock: o.toBlock,
    requestedFrom: o.fromBlock,
    complete: scannedFrom <= o.fromBlock,
    stoppedBecause,
    requests,
    logs,
  }
}

/** A refusal worth retrying with a smaller range: a JSON-RPC error, or an answer over the size cap. */
function tooLarge(c: ChainClient, err: unknown): boolean {
  if (err instanceof HandlerUpstreamError) return /larger than/.test(err.message)
  if (!(err instanceof c.viem.BaseError)) return false
  const inner = err.walk((e) => e instanceof HandlerUpstreamError)
  if (inner instanceof HandlerUpstreamError) return /larger than/.test(inner.message)
  return !!err.walk((e) => e instanceof c.viem.RpcRequestError)
}

/** One line for the output: what was scanned. */
export function describeScan(s: LogScanResult, what: string): string {
  const range = `blocks ${s.scannedFrom}–${s.toBlock}`
  if (s.complete)
    return `${what} in ${range} (${s.toBlock - s.scannedFrom + 1n} blocks, ${s.requests} eth_getLogs requests, ${s.logs} logs)`
  if (s.stoppedBecause === 'result-limit')
    return `${what} in ${range}: these newest blocks already held the number of results asked for, so older blocks of the requested ${s.requestedFrom}–${s.toBlock} were not scanned (${s.requests} requests, ${s.logs} logs)`
  return `${what} in ${range} only: the scan of ${s.requestedFrom}–${s.toBlock} stopped at its ${s.stoppedBecause} after ${s.requests} requests and ${s.logs} logs`
}

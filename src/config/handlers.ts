import { parseHandlerAddress, type HandlerAddress } from '../pool/handler-address.js'
import type { EnvReader } from './env-reader.js'
import type { Config } from './types.js'

/** HANDLERS_URL (the handlers role's addresses) and HANDLERS_LISTEN (at most one). */
export interface HandlerAddresses {
  url: HandlerAddress[]
  listen: HandlerAddress[]
}

export function readHandlerAddresses(r: EnvReader): HandlerAddresses {
  const url = addressList(r, 'HANDLERS_URL')
  const listen = addressList(r, 'HANDLERS_LISTEN')
  if (listen.length > 1) r.problems.push('HANDLERS_LISTEN: one address, the one this handlers role listens on')
  return { url, listen }
}

/** A comma-separated list of `unix:/path` and `tcp://host:port` addresses (empty when unset). */
function addressList(r: EnvReader, name: string): HandlerAddress[] {
  const out: HandlerAddress[] = []
  for (const item of (r.optional(name) ?? '').split(',').filter((x) => x.trim())) {
    const a = parseHandlerAddress(item)
    if (typeof a === 'string') r.problems.push(`${name}: ${a}`)
    else out.push(a)
  }
  return out
}

/** The handler processes' limits and where the handlers role is (Config.handlers). */
export function handlersConfig(r: EnvReader, addresses: HandlerAddresses): Config['handlers'] {
  return {
    timeoutMs: r.int('HANDLER_TIMEOUT_MS', 10000, 100, 120000),
    maxThreads: r.int('HANDLER_MAX_THREADS', 2, 1, 64),
    memoryMb: r.int('HANDLER_MEMORY_MB', 256, 32, 4096),
    maxQueue: r.int('HANDLER_MAX_QUEUE', 512, 1, 100000),
    ioThreads: r.int('HANDLER_IO_THREADS', 1, 1, 64),
    ioConcurrency: r.int('HANDLER_IO_CONCURRENCY', 32, 1, 1000),
    rssMb: r.int('HANDLER_RSS_MB', 1536, 64, 65536),
    url: addresses.url,
    listen: addresses.listen[0] ?? (addresses.url.length === 1 ? addresses.url[0] : undefined),
  }
}

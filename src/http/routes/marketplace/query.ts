import { appError } from '../../../errors.js'
import { decodeCursor, MAX_PAGE, type ListQuery } from '../../../services/marketplace/marketplace.js'
import { decodeSearchCursor, type EndpointSearchQuery } from '../../../services/marketplace/endpoint-search.js'
import { FILTER_NETWORKS, HTTP_METHODS, SOURCES, type FilterNetwork } from '../../../services/marketplace/types.js'

type Query = Record<string, string | string[] | undefined>

function invalid(param: string, detail: string): never {
  throw appError('invalid_parameter', { param, detail }, { details: { param } })
}

/** One value of a query parameter; repeating it is an error. */
function one(q: Query, name: string): string | undefined {
  const v = q[name]
  if (Array.isArray(v)) invalid(name, 'give it at most once')
  return v
}

function oneOf<T extends string>(q: Query, name: string, values: readonly T[]): T | undefined {
  const v = one(q, name)
  if (v === undefined) return undefined
  if (!(values as readonly string[]).includes(v)) invalid(name, `expected one of ${values.join(', ')}`)
  return v as T
}

function text(q: Query, name: string, max: number): string | undefined {
  const v = one(q, name)
  if (v === undefined) return undefined
  if (v.trim() === '') invalid(name, 'must not be empty')
  if (v.length > max) invalid(name, `at most ${max} characters`)
  return v
}

function int(q: Query, name: string, min: number, max: number): number | undefined {
  const v = one(q, name)
  if (v === undefined) return undefined
  if (!/^[0-9]{1,9}$/.test(v) || Number(v) < min || Number(v) > max)
    invalid(name, `expected an integer from ${min} to ${max}`)
  return Number(v)
}

/** The `network` override, or the deployment's own network (chain id 8453 → base, 84532 → base-sepolia). */
export function parseNetwork(q: Query, deployment: FilterNetwork): FilterNetwork {
  return oneOf(q, 'network', FILTER_NETWORKS) ?? deployment
}

/** Parse and check the list query; a bad value is a 400 naming the parameter. */
export function parseListQuery(q: Query): ListQuery {
  const cursor = one(q, 'cursor')
  const key = cursor === undefined ? undefined : decodeCursor(cursor)
  if (cursor !== undefined && key === undefined) invalid('cursor', 'not a cursor returned by this API')
  return {
    source: oneOf(q, 'source', SOURCES),
    category: text(q, 'category', 100),
    search: text(q, 'search', 200),
    limit: int(q, 'limit', 1, MAX_PAGE),
    cursor: key,
  }
}

export function parseDiscoveryQuery(q: Query): { type?: string; limit: number; offset: number } {
  return {
    type: text(q, 'type', 32),
    limit: int(q, 'limit', 1, MAX_PAGE) ?? 100,
    offset: int(q, 'offset', 0, 100_000_000) ?? 0,
  }
}

/** Decimal USDC ("0.01") to atomic units; a bad value is a 400 naming the parameter. */
function usdc(q: Query, name: string): bigint | undefined {
  const v = one(q, name)
  if (v === undefined) return undefined
  const m = /^([0-9]{1,12})(?:\.([0-9]{1,6}))?$/.exec(v)
  if (!m) invalid(name, 'expected a USDC amount such as 0.01 (at most 6 decimals)')
  return BigInt(m[1]!) * 1_000_000n + BigInt((m[2] ?? '').padEnd(6, '0'))
}

function cursorOf(q: Query): string | undefined {
  const cursor = one(q, 'cursor')
  if (cursor !== undefined && Number.isNaN(decodeSearchCursor(cursor)))
    invalid('cursor', 'not a cursor returned by this API; start again without it')
  return cursor
}

function method(q: Query): string | undefined {
  const m = one(q, 'method')
  if (m === undefined) return undefined
  const upper = m.toUpperCase()
  if (!(HTTP_METHODS as readonly string[]).includes(upper))
    invalid('method', `expected one of ${HTTP_METHODS.join(', ')}`)
  return upper
}

const SEARCH_DEFAULT_LIMIT = 20
const SEARCH_MAX_LIMIT = 100

/** `GET /api/v1/endpoints`: words, filters and a page; `maxPrice` in USDC. */
export function parseEndpointQuery(q: Query): EndpointSearchQuery {
  const examples = oneOf(q, 'includeExamples', ['true', 'false'] as const)
  return {
    text: text(q, 'search', 200),
    namespace: text(q, 'namespace', 64),
    maxPrice: usdc(q, 'maxPrice'),
    scheme: text(q, 'scheme', 32),
    method: method(q),
    includeExamples: examples === 'true',
    limit: int(q, 'limit', 1, SEARCH_MAX_LIMIT) ?? SEARCH_DEFAULT_LIMIT,
    cursor: cursorOf(q),
  }
}

export interface BazaarSearchQuery extends EndpointSearchQuery {
  type?: string
  payTo?: string
  extensions?: string
}

/** `GET /discovery/search` as the x402 Bazaar client sends it (`query` required, `network` CAIP-2). */
export function parseBazaarSearchQuery(q: Query): BazaarSearchQuery {
  const query = text(q, 'query', 200)
  if (query === undefined) invalid('query', 'required: the words to search for, e.g. ?query=hash')
  const network = one(q, 'network')
  if (network !== undefined && !/^[a-z0-9-]{3,8}:[A-Za-z0-9_-]{1,64}$/.test(network))
    invalid('network', 'expected a CAIP-2 network id such as eip155:8453')
  return {
    text: query,
    type: text(q, 'type', 32),
    payTo: text(q, 'payTo', 64)?.toLowerCase(),
    scheme: text(q, 'scheme', 32),
    network,
    extensions: text(q, 'extensions', 64),
    limit: int(q, 'limit', 1, SEARCH_MAX_LIMIT) ?? SEARCH_DEFAULT_LIMIT,
    cursor: cursorOf(q),
  }
}

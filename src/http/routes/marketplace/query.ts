import { appError } from '../../../errors.js'
import { decodeCursor, MAX_PAGE, type ListQuery } from '../../../services/marketplace/marketplace.js'
import { FILTER_NETWORKS, SOURCES, type FilterNetwork } from '../../../services/marketplace/types.js'

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

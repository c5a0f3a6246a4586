/** How the CLI shows found endpoints: price in USDC, methods, and the command that pays one. */
import type { EndpointSearchPage, SearchEndpointsFilters } from '../marketplace-client.js'
import { isFilterNetwork } from '../services/marketplace/types.js'
import { UsageError } from './errors.js'

type Item = EndpointSearchPage['items'][number]

/** Single-quoted for a POSIX shell. */
function shellQuote(s: string): string {
  return /^[A-Za-z0-9_./:@%+=,-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`
}

/**
 * The `tollgate fetch` line that calls and pays an endpoint; undefined for a made-up example
 * listing, whose host does not resolve (nothing offers it as runnable).
 */
export function payCommand(e: Pick<Item, 'url' | 'methods' | 'example'>): string | undefined {
  if (e.example) return undefined
  if (e.methods.includes('GET')) return `tollgate fetch ${shellQuote(e.url)}`
  const method = e.methods.find((m) => m === 'POST' || m === 'PUT' || m === 'PATCH') ?? e.methods[0] ?? 'POST'
  return `tollgate fetch -X ${method} ${shellQuote(e.url)} --json '{}'`
}

/** Human lines for one page of endpoints. */
export function endpointLines(items: readonly Item[]): string[] {
  return items.flatMap((e) => {
    const price = e.price.usdc !== null ? `${e.price.usdc} USDC` : `${e.price.amount} ${e.price.currency} (atomic)`
    const name = e.namespace ? `${e.namespace}/${e.service}/${e.slug}` : `${e.entry.name}: ${e.slug}`
    const run = payCommand(e)
    return [
      `${name}${e.example ? '  (example)' : ''}  ${price}  ${e.methods.join('|')}`,
      ...(e.description ? [`    ${e.description}`] : []),
      run ? `    ${run}` : '    (an example listing: its host does not resolve, not callable)',
    ]
  })
}

export const SEARCH_OPTIONS = {
  namespace: { type: 'string' },
  'max-price': { type: 'string' },
  method: { type: 'string' },
  scheme: { type: 'string' },
  network: { type: 'string' },
  limit: { type: 'string' },
  cursor: { type: 'string' },
  'include-examples': { type: 'boolean' },
} as const

/** The search filters from the command line's options; a bad value is a usage error. */
export function searchFilters(
  words: string | undefined,
  v: Partial<Record<keyof typeof SEARCH_OPTIONS, string | boolean | undefined>>,
  help: string,
): SearchEndpointsFilters {
  const str = (k: keyof typeof SEARCH_OPTIONS) => (typeof v[k] === 'string' ? (v[k] as string) : undefined)
  const network = str('network')
  if (network !== undefined && !isFilterNetwork(network))
    throw new UsageError(`--network is base or base-sepolia, got "${network}"\n\n${help}`)
  const maxPrice = str('max-price')
  if (maxPrice !== undefined && !/^[0-9]{1,12}(\.[0-9]{1,6})?$/.test(maxPrice))
    throw new UsageError(`--max-price is a USDC amount such as 0.01, got "${maxPrice}"\n\n${help}`)
  const limit = str('limit')
  if (limit !== undefined && !/^[0-9]{1,3}$/.test(limit))
    throw new UsageError(`--limit is a number from 1 to 100, got "${limit}"\n\n${help}`)
  const filters: SearchEndpointsFilters = {
    search: words,
    namespace: str('namespace'),
    maxPrice,
    method: str('method')?.toUpperCase(),
    scheme: str('scheme'),
    network,
    limit: limit === undefined ? undefined : Number(limit),
    cursor: str('cursor'),
    includeExamples: v['include-examples'] === true ? true : undefined,
  }
  return Object.fromEntries(Object.entries(filters).filter(([, x]) => x !== undefined)) as SearchEndpointsFilters
}

/** The note under a page: how many, and how to get the next. */
export function pageNote(page: EndpointSearchPage, again: string): string {
  const shown = page.items.length
  const head = `${page.total} endpoint${page.total === 1 ? '' : 's'}${shown < page.total ? `, ${shown} shown` : ''}`
  return page.nextCursor ? `${head}; next page: ${again} --cursor ${page.nextCursor}` : head
}

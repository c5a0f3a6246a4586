/** `tollgate marketplace list|show`: the marketplace catalogue of the context's API. */
import {
  createMarketplaceClient,
  MarketplaceError,
  MarketplaceNotFoundError,
  type CuratedAgentDTO,
  type MarketplaceClient,
} from '../../marketplace-client.js'
import { isExampleEntry } from '../../services/marketplace/example-entry.js'
import { FILTER_NETWORKS, isFilterNetwork, type FilterNetwork } from '../../services/marketplace/types.js'
import { formatUsdc } from '../../x402/usdc-amount.js'
import { namingFetch } from '../api-client.js'
import { parseOptions, type Command } from '../command.js'
import { payCommand, SEARCH_OPTIONS, searchFilters } from '../endpoint-search-output.js'
import { CliError, UsageError } from '../errors.js'
import { EXIT } from '../exit-codes.js'
import { runEndpointSearch } from './search.js'

export const MARKETPLACE_HELP = `usage: tollgate marketplace list [--source catalog|bazaar|platform] [--category c] [--network base|base-sepolia] [--include-examples] [--json]
       tollgate marketplace list --search <words> [search options of "tollgate search"] [--json]
       tollgate marketplace show <name or id> [--network base|base-sepolia] [--json]

list shows each entry with its price range; --search lists endpoints instead, best match first,
each with its price, methods and the command that pays it (as "tollgate search <words>").
Example catalog listings (made-up hosts that do not resolve) are hidden unless --include-examples,
and marked "(example)" with no runnable command.

--network overrides the API's default (the network its deployment settles on: base-sepolia on a
sandbox API, base on production). An entry whose endpoints are all on the other network is listed
only with that --network; show names the network where they are.
`

type Endpoint = CuratedAgentDTO['endpoints'][number]

/** "0.001 USDC", or "0.001–0.01 USDC" over several endpoints. */
function priceRange(eps: readonly Endpoint[]): string {
  const usdc = eps.filter((e) => e.pricing_config.currency.toUpperCase() === 'USDC')
  if (usdc.length === 0) return eps.length ? 'price in another asset' : 'no endpoints'
  const amounts = usdc.map((e) => BigInt(e.pricing_config.amountAtomicUnit))
  const lo = amounts.reduce((a, b) => (b < a ? b : a))
  const hi = amounts.reduce((a, b) => (b > a ? b : a))
  return lo === hi ? `${formatUsdc(lo)} USDC` : `${formatUsdc(lo)}–${formatUsdc(hi)} USDC`
}

function entryLines(e: CuratedAgentDTO): string[] {
  const example = isExampleEntry(e)
  return [
    `${e.name}${example && !/\(example\)/i.test(e.name) ? ' (example)' : ''}  (${e.id}) [${e.category}] ${e.source}`,
    ...(e.description ? [`  ${e.description}`] : []),
    ...(example ? ['  an example listing: its hosts do not resolve; nothing here is callable'] : []),
    ...e.endpoints.flatMap((p) => {
      const price =
        p.pricing_config.currency.toUpperCase() === 'USDC'
          ? `${formatUsdc(p.pricing_config.amountAtomicUnit)} USDC`
          : `${p.pricing_config.amountAtomicUnit} ${p.pricing_config.currency} (atomic)`
      const run = payCommand({ url: p.url, methods: p.methods, example })
      return [
        `  ${p.methods.join('|')} ${p.url}  ${price}${p.description ? `  ${p.description}` : ''}`,
        ...(run ? [`    ${run}`] : []),
      ]
    }),
  ]
}

/** The path part `<namespace>/<service>` of a platform entry's endpoint URLs. */
function servicePath(e: CuratedAgentDTO): string | undefined {
  if (e.source !== 'platform') return undefined
  const parts =
    URL.parse(e.endpoints[0]?.url ?? '')
      ?.pathname.split('/')
      .filter(Boolean) ?? []
  return parts.length === 3 ? `${parts[0]}/${parts[1]}` : undefined
}

/**
 * An entry by id, else by name: its display name (any case), or a platform service as
 * `<namespace>/<service>` or `<service>`. Several entries of one name: a usage error listing their ids.
 */
async function findEntry(market: MarketplaceClient, ref: string, network: FilterNetwork | undefined) {
  try {
    return await market.getAgent(ref, { network })
  } catch (err) {
    if (!(err instanceof MarketplaceNotFoundError)) throw err
  }
  const needle = ref.trim().toLowerCase()
  const all: CuratedAgentDTO[] = []
  for (const n of network ? [network] : FILTER_NETWORKS)
    for (const e of await market.listAgents({ network: n })) if (!all.some((a) => a.id === e.id)) all.push(e)
  const named = all.filter((e) => {
    const path = servicePath(e)
    return (
      e.name.toLowerCase() === needle ||
      e.name.replace(/\s*\(example\)\s*$/i, '').toLowerCase() === needle ||
      path === needle ||
      path?.split('/')[1] === needle
    )
  })
  if (named.length === 0) throw new MarketplaceNotFoundError(ref)
  if (named.length > 1)
    throw new UsageError(
      `${named.length} entries are named "${ref}": ${named.map((e) => e.id).join(', ')}; show one by its id`,
    )
  return market.getAgent(named[0]!.id, { network })
}

export async function marketplaceCommand(args: string[], cmd: Command): Promise<number> {
  const [sub, ...rest] = args
  const { values: v, positionals } = parseOptions(
    rest,
    {
      source: { type: 'string' },
      category: { type: 'string' },
      search: { type: 'string' },
      ...SEARCH_OPTIONS,
    },
    MARKETPLACE_HELP,
    { positionals: true },
  )
  if (v.help || sub === '--help' || sub === '-h') {
    cmd.io.stdout(MARKETPLACE_HELP)
    return EXIT.ok
  }
  if (v.network !== undefined && !isFilterNetwork(v.network))
    throw new UsageError(`--network is base or base-sepolia, got "${v.network}"\n\n${MARKETPLACE_HELP}`)
  const network = v.network as FilterNetwork | undefined
  // the CLI's API address (TOLLGATE_API_URL, the context, or local); the library itself defaults to production
  const s = cmd.settings()
  const market = createMarketplaceClient({
    baseUrl: s.apiUrl,
    fetch: namingFetch(cmd.io.fetch ?? fetch, s.apiUrl, s.apiUrlSource) as typeof fetch,
  })
  try {
    if (sub === 'list' && positionals.length === 0 && v.search !== undefined) {
      if (v.source !== undefined || v.category !== undefined)
        throw new UsageError(`--search lists endpoints; --source and --category filter entries\n\n${MARKETPLACE_HELP}`)
      return await runEndpointSearch(
        cmd,
        searchFilters(v.search, v, MARKETPLACE_HELP),
        `tollgate marketplace list --search '${v.search}'`,
      )
    }
    if (sub === 'list' && positionals.length === 0) {
      const filters = Object.fromEntries(
        Object.entries({ source: v.source, category: v.category, network }).filter(([, x]) => x !== undefined),
      )
      const listed = await market.listAgents(filters as never)
      const agents = v['include-examples'] ? listed : listed.filter((a) => !isExampleEntry(a))
      const hidden = listed.length - agents.length
      cmd.out.result(agents, () =>
        agents.map((a) => {
          const eps = a.endpoints
          const example = isExampleEntry(a) && !/\(example\)/i.test(a.name) ? ' (example)' : ''
          return `${a.id}  ${a.name}${example}  [${a.category}]  ${eps.length} endpoint${eps.length === 1 ? '' : 's'}  ${priceRange(eps)}`
        }),
      )
      cmd.out.note(
        `${agents.length} entr${agents.length === 1 ? 'y' : 'ies'}${network ? ` on ${network}` : " on this API's default network (--network base or base-sepolia for the other's)"}` +
          (hidden ? `; ${hidden} example entr${hidden === 1 ? 'y' : 'ies'} hidden (--include-examples)` : ''),
      )
      return EXIT.ok
    }
    if (sub === 'show' && positionals.length === 1) {
      const entry = await findEntry(market, positionals[0]!, network)
      cmd.out.result(entry, () => entryLines(entry))
      if (!network && entry.endpoints.length === 0 && !cmd.out.json) {
        // the entry exists but lists nothing here: say where its endpoints are
        for (const n of FILTER_NETWORKS) {
          const other = await market.getAgent(entry.id, { network: n }).catch(() => undefined)
          if (other?.endpoints?.length) {
            cmd.out.note(
              `no endpoints on this API's default network; ${other.endpoints.length} on ${n}: tollgate marketplace show ${entry.id} --network ${n}`,
            )
            break
          }
        }
      }
      return EXIT.ok
    }
  } catch (err) {
    if (err instanceof MarketplaceNotFoundError || err instanceof MarketplaceError)
      throw new CliError(err.message, {
        exit: EXIT.http,
        code: err.code ?? (err instanceof MarketplaceNotFoundError ? 'not_found' : 'marketplace_error'),
        human: err.message,
      })
    throw err
  }
  throw new UsageError(MARKETPLACE_HELP)
}

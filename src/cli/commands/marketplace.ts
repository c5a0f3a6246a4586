/** `tollgate marketplace list|show`: the marketplace catalogue of the context's API. */
import { createMarketplaceClient, MarketplaceError, MarketplaceNotFoundError } from '../../marketplace-client.js'
import { FILTER_NETWORKS, isFilterNetwork } from '../../services/marketplace/types.js'
import { namingFetch } from '../api-client.js'
import { parseOptions, type Command } from '../command.js'
import { CliError, UsageError } from '../errors.js'
import { EXIT } from '../exit-codes.js'

export const MARKETPLACE_HELP = `usage: tollgate marketplace list [--source catalog|bazaar|platform] [--category c] [--search q] [--network base|base-sepolia] [--json]
       tollgate marketplace show <id> [--network base|base-sepolia] [--json]

--network overrides the API's default (the network its deployment settles on: base-sepolia on a
sandbox API, base on production). An entry whose endpoints are all on the other network is listed
only with that --network; show names the network where they are.
`

export async function marketplaceCommand(args: string[], cmd: Command): Promise<number> {
  const [sub, ...rest] = args
  const { values: v, positionals } = parseOptions(
    rest,
    {
      source: { type: 'string' },
      category: { type: 'string' },
      search: { type: 'string' },
      network: { type: 'string' },
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
  // the CLI's API address (TOLLGATE_API_URL, the context, or local); the library itself defaults to production
  const s = cmd.settings()
  const market = createMarketplaceClient({
    baseUrl: s.apiUrl,
    fetch: namingFetch(cmd.io.fetch ?? fetch, s.apiUrl, s.apiUrlSource) as typeof fetch,
  })
  try {
    if (sub === 'list' && positionals.length === 0) {
      const filters = Object.fromEntries(
        Object.entries({ source: v.source, category: v.category, search: v.search, network: v.network }).filter(
          ([, x]) => x !== undefined,
        ),
      )
      const agents = (await market.listAgents(filters as never)) as Array<Record<string, any>>
      cmd.out.result(agents, () =>
        agents.map((a) => {
          const eps = Array.isArray(a.endpoints) ? a.endpoints : []
          return `${a.id}  ${a.name}  [${a.category}]  ${eps.length} endpoint${eps.length === 1 ? '' : 's'}`
        }),
      )
      cmd.out.note(
        `${agents.length} entr${agents.length === 1 ? 'y' : 'ies'}${v.network ? ` on ${v.network}` : " on this API's default network (--network base or base-sepolia for the other's)"}`,
      )
      return EXIT.ok
    }
    if (sub === 'show' && positionals.length === 1) {
      const id = positionals[0]!
      const entry = (await market.getAgent(id, { network: v.network as never })) as Record<string, any>
      cmd.out.result(entry, JSON.stringify(entry, null, 2))
      if (!v.network && Array.isArray(entry.endpoints) && entry.endpoints.length === 0 && !cmd.out.json) {
        // the entry exists but lists nothing here: say where its endpoints are
        for (const n of FILTER_NETWORKS) {
          const other = (await market.getAgent(id, { network: n }).catch(() => undefined)) as
            Record<string, any> | undefined
          if (other?.endpoints?.length) {
            cmd.out.note(
              `no endpoints on this API's default network; ${other.endpoints.length} on ${n}: tollgate marketplace show ${id} --network ${n}`,
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

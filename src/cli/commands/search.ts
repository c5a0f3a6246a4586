/** `tollgate search <words>`: the endpoints of every marketplace entry by what they do. */
import { createMarketplaceClient, MarketplaceError } from '../../marketplace-client.js'
import { namingFetch } from '../api-client.js'
import { parseOptions, type Command } from '../command.js'
import { endpointLines, pageNote, SEARCH_OPTIONS, searchFilters } from '../endpoint-search-output.js'
import { CliError, UsageError } from '../errors.js'
import { EXIT } from '../exit-codes.js'

export const SEARCH_HELP = `usage: tollgate search <words> [--namespace ns] [--max-price usdc] [--method M] [--scheme s]
                       [--network base|base-sepolia] [--limit n] [--cursor c] [--include-examples] [--json]

Finds paid endpoints by what they do, best match first (a match in the endpoint's name above one in
its tags or input fields, above one in its description), each with its price in USDC, its methods
and the command that calls and pays it (tollgate fetch). Example catalog listings (made-up hosts)
are left out unless --include-examples, and never offered as runnable.

  --namespace ns      one seller's endpoints (tollgate: the hosted ones)
  --max-price usdc    at most this price per call, e.g. 0.01
  --method M          endpoints that take this HTTP method
  --scheme s          endpoints that offer this x402 scheme (exact, deferred)
  --network n         base or base-sepolia (default: the API's deployment network)
  --limit n           per page, 1 to 100 (default 20); --cursor c for the next page
`

export async function searchCommand(args: string[], cmd: Command): Promise<number> {
  const { values: v, positionals } = parseOptions(args, SEARCH_OPTIONS, SEARCH_HELP, { positionals: true })
  if (v.help) {
    cmd.io.stdout(SEARCH_HELP)
    return EXIT.ok
  }
  const words = positionals.join(' ').trim()
  if (words === '') throw new UsageError(`say what to search for: tollgate search hash\n\n${SEARCH_HELP}`)
  return runEndpointSearch(cmd, searchFilters(words, v, SEARCH_HELP), `tollgate search ${positionals.join(' ')}`)
}

/** Search, print one page (human lines or --json), and say how to get the next. */
export async function runEndpointSearch(
  cmd: Command,
  filters: ReturnType<typeof searchFilters>,
  again: string,
): Promise<number> {
  const s = cmd.settings()
  const market = createMarketplaceClient({
    baseUrl: s.apiUrl,
    fetch: namingFetch(cmd.io.fetch ?? fetch, s.apiUrl, s.apiUrlSource) as typeof fetch,
  })
  try {
    const page = await market.searchEndpoints(filters)
    cmd.out.result(page, () => endpointLines(page.items))
    cmd.out.note(pageNote(page, again))
    return EXIT.ok
  } catch (err) {
    if (err instanceof MarketplaceError)
      throw new CliError(err.message, { exit: EXIT.http, code: err.code ?? 'marketplace_error', human: err.message })
    throw err
  }
}

/**
 * `tollgate revenue`: for a seller, each of your endpoints since a time (default 30 days): paid
 * calls, revenue, what has settled, and the vouchers (deferred payments) not collected yet, in
 * USDC (GET /v1/revenue; --json has the atomic units).
 */
import { formatUsdc } from '../../x402/usdc-amount.js'
import { parseOptions, type Command } from '../command.js'
import { UsageError } from '../errors.js'
import { EXIT } from '../exit-codes.js'
import { table } from '../table.js'
import { parseSince } from './payments.js'

export const REVENUE_HELP = `usage: tollgate revenue [--since <when>] [--json]

Your endpoints' paid calls and revenue since --since (a date or time, 2026-01-31 or
2026-01-31T12:00Z, or an age, 24h or 7d; default 30d), what of it has settled, and the vouchers
(deferred payments) not collected yet, per endpoint, in USDC. Uses the API key.
`

interface Row {
  path: string
  calls: number
  revenue: string
  settled: string
  uncollected_vouchers: number
  uncollected: string
}

export async function revenueCommand(args: string[], cmd: Command): Promise<number> {
  const { values: v, positionals } = parseOptions(args, { since: { type: 'string' } }, REVENUE_HELP, {
    positionals: true,
  })
  if (v.help) {
    cmd.io.stdout(REVENUE_HELP)
    return EXIT.ok
  }
  if (positionals.length) throw new UsageError(REVENUE_HELP)
  const since = parseSince(v.since ?? '30d')
  const r = await cmd.api().user<{ since: string; endpoints: Row[]; total: Row }>('GET', '/v1/revenue', {
    query: { since },
  })
  cmd.out.result(r, () =>
    r.endpoints.length === 0
      ? 'no endpoints yet: tollgate publish makes one (publish.yaml is an example)'
      : [
          `since ${r.since.replace('T', ' ').slice(0, 16)} UTC`,
          ...table(
            [
              { header: 'ENDPOINT', cell: (e) => e.path },
              { header: 'CALLS', cell: (e) => String(e.calls), align: 'right' },
              { header: 'REVENUE USDC', cell: (e) => formatUsdc(e.revenue), align: 'right' },
              { header: 'SETTLED USDC', cell: (e) => formatUsdc(e.settled), align: 'right' },
              { header: 'UNCOLLECTED VOUCHERS', cell: (e) => String(e.uncollected_vouchers), align: 'right' },
              { header: 'UNCOLLECTED USDC', cell: (e) => formatUsdc(e.uncollected), align: 'right' },
            ],
            [...r.endpoints, { ...r.total, path: 'total' }],
          ),
        ],
  )
  return EXIT.ok
}

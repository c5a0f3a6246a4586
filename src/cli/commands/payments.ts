/**
 * `tollgate payments status <id>` (a payment an agent signed, with its settlement; the agent key, or
 * the API key with --agent), `tollgate payments list` (payments by your agents or to your
 * endpoints, newest first, as a table; API key) and `tollgate payments export` (the whole filtered
 * history as CSV or NDJSON, streamed from GET /v1/transactions). One id names a payment: the
 * ledger's (list, export, the dashboard) or the agent payment's (fetch's receipt) both work.
 */
import { FINAL_STATUSES, OPEN_STATUSES, PAYMENT_STATUSES } from '../../ledger/statuses.js'
import { formatUsdc } from '../../x402/usdc-amount.js'
import { resolveAgent } from '../agent-ref.js'
import { parseOptions, wantsHelp, type Command } from '../command.js'
import { CliError, UsageError } from '../errors.js'
import { EXIT } from '../exit-codes.js'
import { minute, short, table } from '../table.js'

export const PAYMENTS_HELP = `usage: tollgate payments status <payment-id> [--agent <name|address>] [--wait [--timeout SECONDS]] [--json]
       tollgate payments list [--agent <name|address>] [--since <when>] [--status <s>[,<s>…]]
                              [--role buyer|seller] [--limit n] [--json]
       tollgate payments export --format csv|ndjson [--agent …] [--since <when>] [--status …]
                                [--role buyer|seller] [--output FILE]

status  one payment an agent signed, with its settlement and transaction once settled: the id
        payments list shows or the one in fetch's receipt. Uses the agent key, or with --agent the
        API key. --wait waits (with progress) until it has settled or failed, for a payment to this
        platform's endpoints (default timeout 120 s)
list    payments made by your agents to this platform's endpoints, or received by yours, and
        withdrawals, newest first; uses the API key. --since takes a date or time (2026-01-31,
        2026-01-31T12:00Z) or an age (30m, 24h, 7d); --status one of ${PAYMENT_STATUSES.join(', ')},
        or pending (${OPEN_STATUSES.join(', ')}); --limit at most 1000 (default 20)
export  the whole history the filters keep, oldest first, as CSV (a header row) or NDJSON (one
        JSON object a line), on stdout or into --output FILE; amounts in atomic units (1 USDC =
        1000000), as the API gives them; uses the API key
`

const STATUSES: readonly string[] = PAYMENT_STATUSES
const PENDING: readonly string[] = OPEN_STATUSES

interface Transaction {
  id: string
  created_at: string
  status: string
  payer: string | null
  pay_to: string | null
  value: string
  resource: string | null
  method: string | null
  tx_hash: string | null
  failure_reason: string | null
  /** payment, sign_in (a call served on a sign-in: nothing paid) or withdrawal */
  kind?: string
  /** sign_in: the payment whose access served it */
  grant_payment_id?: string | null
}

export async function paymentsCommand(args: string[], cmd: Command): Promise<number> {
  const [sub, ...rest] = args
  if (sub === '--help' || sub === '-h' || ((sub === 'status' || sub === 'list') && wantsHelp(rest))) {
    cmd.io.stdout(PAYMENTS_HELP)
    return EXIT.ok
  }
  if (sub === 'export' && wantsHelp(rest)) {
    cmd.io.stdout(PAYMENTS_HELP)
    return EXIT.ok
  }
  if (sub === 'status') return status(rest, cmd)
  if (sub === 'list') return list(rest, cmd)
  if (sub === 'export') return exportHistory(rest, cmd)
  throw new UsageError(PAYMENTS_HELP)
}

interface AgentPayment {
  id: string
  status: string
  counted?: boolean
  url: string
  method: string
  amount: string
  max_amount?: string | null
  pay_to: string
  payer: string
  network: string
  scheme?: string | null
  created_at: string
  transaction: string | null
  settlement: { payment_id: string; status: string; failure_reason?: string | null } | null
}

/** Settled, or past settling: nothing more will change for --wait. */
const DONE: ReadonlySet<string> = FINAL_STATUSES

async function status(args: string[], cmd: Command): Promise<number> {
  const { values: v, positionals } = parseOptions(
    args,
    { wait: { type: 'boolean' }, timeout: { type: 'string' }, agent: { type: 'string' } },
    PAYMENTS_HELP,
    { positionals: true },
  )
  if (positionals.length !== 1) throw new UsageError(PAYMENTS_HELP)
  const timeoutS = Number(v.timeout ?? 120)
  if (!Number.isFinite(timeoutS) || timeoutS <= 0) throw new UsageError('--timeout: expected seconds above 0')
  const api = cmd.api()
  const id = encodeURIComponent(positionals[0]!)
  let get: () => Promise<AgentPayment>
  if (v.agent !== undefined) {
    const a = await resolveAgent(api, cmd.settings(), v.agent)
    get = () => api.user<AgentPayment>('GET', `/v1/agents/${a.address}/payments/${id}`)
  } else get = () => api.agent<AgentPayment>('GET', `/v1/agent/payments/${id}`)
  let p = await get()
  const waiting = () =>
    !p.transaction &&
    p.settlement !== null &&
    !DONE.has(p.settlement.status) &&
    p.status !== 'rejected' &&
    p.status !== 'expired'
  if (v.wait && waiting()) {
    const progress = cmd.out.progress(`waiting for payment ${p.id} to settle`)
    const deadline = Date.now() + timeoutS * 1000
    try {
      while (waiting()) {
        progress.update(p.settlement!.status)
        if (Date.now() > deadline)
          throw new CliError(`payment ${p.id} has not settled within ${timeoutS} s (${p.settlement!.status})`, {
            code: 'settlement_pending',
            toFix: `it settles without you: tollgate payments status ${p.id}`,
          })
        await new Promise((r) => setTimeout(r, 500))
        p = await get()
      }
    } finally {
      progress.done()
    }
  } else if (v.wait && p.settlement === null && !cmd.out.json) {
    cmd.out.note('this payment went to a seller outside this platform: its settlement is not known here')
  }
  cmd.out.result(p, () => describePayment(p))
  return EXIT.ok
}

/** One payment for a person: what, to whom, how much in USDC, where it stands, and its ids. */
function describePayment(p: AgentPayment): string[] {
  const amount =
    p.max_amount && p.max_amount !== p.amount
      ? `${formatUsdc(p.amount)} USDC (at most ${formatUsdc(p.max_amount)})`
      : `${formatUsdc(p.amount)} USDC`
  const settlement = p.settlement
    ? `${p.settlement.status}${p.settlement.status === 'failed' && p.settlement.failure_reason ? ` (${p.settlement.failure_reason})` : ''}`
    : 'not known here (a seller outside this platform)'
  return [
    `payment ${p.settlement?.payment_id ?? p.id}`,
    `  ${p.method} ${p.url}`,
    `  ${amount} from ${p.payer} to ${p.pay_to} (${p.scheme ?? 'exact'}, ${p.network})`,
    `  signed     ${p.status}${p.counted ? ', counted against the caps' : ''}, ${p.created_at}`,
    `  settlement ${settlement}`,
    ...(p.transaction ? [`  transaction ${p.transaction}`] : []),
    ...(p.settlement ? [`  agent payment ${p.id}`] : []),
  ]
}

/** The list for a person: a header, UTC minutes, USDC, short addresses, what was paid for. */
function paymentsTable(rows: Transaction[]): string[] {
  return table(
    [
      { header: 'TIME (UTC)', cell: (r) => minute(r.created_at) },
      { header: 'ID', cell: (r) => r.id },
      { header: 'STATUS', cell: (r) => r.status },
      { header: 'USDC', cell: (r) => formatUsdc(r.value), align: 'right' },
      { header: 'FROM', cell: (r) => short(r.payer) },
      { header: 'TO', cell: (r) => short(r.pay_to) },
      { header: 'FOR', cell: (r) => paidFor(r) },
    ],
    rows,
  )
}

function paidFor(r: Transaction): string {
  if (r.kind === 'withdrawal') return 'withdrawal'
  let what = r.resource ?? ''
  try {
    const u = new URL(what)
    what = u.pathname + u.search
  } catch {
    // not a URL: as it is
  }
  if (what.length > 48) what = `${what.slice(0, 47)}…`
  const line = `${r.method ?? ''} ${what}`.trim()
  return r.kind === 'sign_in' ? `${line} (signed in on ${r.grant_payment_id ?? 'an earlier payment'})` : line
}

/** `--since 24h` / `7d` / `30m`, or a date or time ISO 8601 takes. */
export function parseSince(text: string, now = Date.now()): string {
  const m = /^(\d+)([mhd])$/.exec(text)
  if (m)
    return new Date(
      now - Number(m[1]) * { m: 60_000, h: 3_600_000, d: 86_400_000 }[m[2] as 'm' | 'h' | 'd'],
    ).toISOString()
  const d = new Date(text)
  if (!/^\d{4}-\d{2}-\d{2}/.test(text) || Number.isNaN(d.getTime()))
    throw new UsageError(
      `--since: expected a date or time (2026-01-31, 2026-01-31T12:00Z) or an age (30m, 24h, 7d), got "${text}"`,
    )
  return d.toISOString()
}

async function list(args: string[], cmd: Command): Promise<number> {
  const { values: v, positionals } = parseOptions(
    args,
    {
      agent: { type: 'string' },
      since: { type: 'string' },
      status: { type: 'string' },
      role: { type: 'string' },
      limit: { type: 'string' },
    },
    PAYMENTS_HELP,
    { positionals: true },
  )
  if (positionals.length) throw new UsageError(PAYMENTS_HELP)
  const limit = Number(v.limit ?? 20)
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000)
    throw new UsageError('--limit: expected a whole number from 1 to 1000')
  if (v.role !== undefined && v.role !== 'buyer' && v.role !== 'seller')
    throw new UsageError('--role: expected buyer or seller')
  let statuses: string[] | undefined
  if (v.status !== undefined) {
    statuses = v.status.split(',').flatMap((x) => (x.trim() === 'pending' ? PENDING : [x.trim()]))
    const bad = statuses.filter((x) => !STATUSES.includes(x))
    if (bad.length)
      throw new UsageError(
        `--status: unknown ${bad.map((x) => `"${x}"`).join(', ')}; expected ${STATUSES.join(', ')} or pending`,
      )
  }
  const from = v.since === undefined ? undefined : parseSince(v.since)
  const api = cmd.api()
  const agent = v.agent === undefined ? undefined : (await resolveAgent(api, cmd.settings(), v.agent)).address
  // the server filters by agent, time and role; the status filter is applied here, page by page
  const rows: Transaction[] = []
  let cursor: string | undefined
  let pages = 0
  let hasMore = true
  while (rows.length < limit && hasMore && pages < 100) {
    const page = await api.user<{ data: Transaction[]; has_more: boolean; next_cursor: string | null }>(
      'GET',
      '/v1/transactions',
      {
        query: {
          order: 'desc',
          limit: statuses ? 100 : Math.min(100, limit - rows.length),
          agent,
          from,
          role: v.role,
          cursor,
        },
      },
    )
    pages++
    rows.push(...page.data.filter((r) => !statuses || statuses.includes(r.status)))
    hasMore = page.has_more
    cursor = page.next_cursor ?? undefined
  }
  const shown = rows.slice(0, limit)
  cmd.out.result({ object: 'list', data: shown, has_more: rows.length > limit || hasMore }, () =>
    shown.length === 0 ? 'no payments' : paymentsTable(shown),
  )
  if (rows.length > limit || hasMore)
    cmd.out.note(`more payments match: raise --limit (at most 1000) or narrow --since`)
  return EXIT.ok
}

/** The whole filtered history, streamed as the API writes it (CSV or NDJSON), to stdout or a file. */
async function exportHistory(args: string[], cmd: Command): Promise<number> {
  const { values: v, positionals } = parseOptions(
    args,
    {
      format: { type: 'string' },
      agent: { type: 'string' },
      since: { type: 'string' },
      status: { type: 'string' },
      role: { type: 'string' },
      output: { type: 'string', short: 'o' },
    },
    PAYMENTS_HELP,
    { positionals: true },
  )
  if (positionals.length) throw new UsageError(PAYMENTS_HELP)
  if (v.format !== 'csv' && v.format !== 'ndjson')
    throw new UsageError(
      `--format: expected csv or ndjson${v.format === undefined ? '' : `, got "${v.format}"`} (tollgate payments list --json gives JSON)`,
    )
  if (v.role !== undefined && v.role !== 'buyer' && v.role !== 'seller')
    throw new UsageError('--role: expected buyer or seller')
  const api = cmd.api()
  const agent = v.agent === undefined ? undefined : (await resolveAgent(api, cmd.settings(), v.agent)).address
  const statuses = v.status
    ?.split(',')
    .flatMap((x) => (x.trim() === 'pending' ? PENDING : [x.trim()]))
    .join(',')
  const res = await api.userRaw('GET', '/v1/transactions', {
    query: {
      format: v.format,
      order: 'asc',
      agent,
      role: v.role,
      status: statuses,
      from: v.since === undefined ? undefined : parseSince(v.since),
    },
    headers: { accept: v.format === 'csv' ? 'text/csv' : 'application/x-ndjson' },
  })
  let rows = 0
  let write: (chunk: Uint8Array) => void = (c) => cmd.io.stdout(c)
  let close = async () => {}
  if (v.output) {
    const { createWriteStream } = await import('node:fs')
    const file = createWriteStream(v.output)
    write = (c) => void file.write(c)
    close = () =>
      new Promise<void>((resolve, reject) => file.end((err?: Error | null) => (err ? reject(err) : resolve())))
  }
  for await (const chunk of res.body ?? []) {
    const bytes = chunk as Uint8Array
    for (const b of bytes) if (b === 10) rows++
    write(bytes)
  }
  await close()
  if (v.output) {
    const n = v.format === 'csv' ? Math.max(0, rows - 1) : rows
    cmd.out.result(
      { object: 'export', format: v.format, file: v.output, rows: n },
      `${n} ${n === 1 ? 'row' : 'rows'} written to ${v.output} (${v.format})`,
    )
  }
  return EXIT.ok
}

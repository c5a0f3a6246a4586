/**
 * `tollgate payments status <id>` (a payment the agent signed, with its settlement; agent key) and
 * `tollgate payments list` (payments by your agents or to your endpoints, newest first; API key).
 */
import { formatUsdc } from '../../x402/usdc-amount.js'
import { resolveAgent } from '../agent-ref.js'
import { parseOptions, wantsHelp, type Command } from '../command.js'
import { CliError, UsageError } from '../errors.js'
import { EXIT } from '../exit-codes.js'

export const PAYMENTS_HELP = `usage: tollgate payments status <payment-id> [--wait [--timeout SECONDS]] [--json]
       tollgate payments list [--agent <name|address>] [--since <when>] [--status <s>[,<s>…]]
                              [--role buyer|seller] [--limit n] [--json]

status  the payment the agent signed (the id in fetch's receipt), with its settlement and
        transaction once settled; --wait waits (with progress) until it has settled or failed,
        for a payment to this platform's endpoints (default timeout 120 s); uses the agent key
list    payments made by your agents to this platform's endpoints, or received by yours, newest
        first; uses the API key. --since takes a date or time (2026-01-31, 2026-01-31T12:00Z) or an
        age (30m, 24h, 7d); --status one of ${'verified, served, settling, settled, voided, failed'}, or
        pending (verified, served or settling); --limit at most 1000 (default 20)
`

const STATUSES = ['verified', 'served', 'settling', 'settled', 'voided', 'failed'] as const
const PENDING = ['verified', 'served', 'settling']

interface Transaction {
  id: string
  created_at: string
  status: string
  payer: string
  pay_to: string
  value: string
  resource: string
  method: string
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
  if (sub === 'status') return status(rest, cmd)
  if (sub === 'list') return list(rest, cmd)
  throw new UsageError(PAYMENTS_HELP)
}

interface AgentPayment {
  id: string
  status: string
  transaction: string | null
  settlement: { payment_id: string; status: string } | null
}

/** Settled, or past settling: nothing more will change for --wait. */
const DONE = new Set(['settled', 'failed', 'voided'])

async function status(args: string[], cmd: Command): Promise<number> {
  const { values: v, positionals } = parseOptions(
    args,
    { wait: { type: 'boolean' }, timeout: { type: 'string' } },
    PAYMENTS_HELP,
    { positionals: true },
  )
  if (positionals.length !== 1) throw new UsageError(PAYMENTS_HELP)
  const timeoutS = Number(v.timeout ?? 120)
  if (!Number.isFinite(timeoutS) || timeoutS <= 0) throw new UsageError('--timeout: expected seconds above 0')
  const api = cmd.api()
  const path = `/v1/agent/payments/${encodeURIComponent(positionals[0]!)}`
  let p = await api.agent<AgentPayment>('GET', path)
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
        p = await api.agent<AgentPayment>('GET', path)
      }
    } finally {
      progress.done()
    }
  } else if (v.wait && p.settlement === null && !cmd.out.json) {
    cmd.out.note('this payment went to a seller outside this platform: its settlement is not known here')
  }
  // the whole record in both modes: it is what there is to know about one payment
  cmd.out.result(p, JSON.stringify(p, null, 2))
  return EXIT.ok
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
    const bad = statuses.filter((x) => !(STATUSES as readonly string[]).includes(x))
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
    shown.length === 0
      ? 'no payments'
      : shown.map(
          (r) =>
            `${r.created_at}  ${r.id}  ${r.status.padEnd(8)}  ${formatUsdc(r.value).padStart(9)} USDC  ${r.payer} → ${r.pay_to}  ${r.method} ${r.resource}${r.tx_hash ? `  ${r.tx_hash}` : ''}${r.kind === 'sign_in' ? `  signed in on the access of ${r.grant_payment_id}` : ''}`,
        ),
  )
  if (rows.length > limit || hasMore)
    cmd.out.note(`more payments match: raise --limit (at most 1000) or narrow --since`)
  return EXIT.ok
}

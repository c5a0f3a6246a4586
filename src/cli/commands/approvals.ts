/**
 * `tollgate approvals [list|approve|deny]`: the payments your agents' approval policies hold for
 * you (human approval, issue 38), and your decision on them. Uses the API key; an agent key cannot
 * decide.
 */
import { parseOptions, type Command } from '../command.js'
import { UsageError } from '../errors.js'
import { EXIT } from '../exit-codes.js'
import { formatUsdc } from '../../x402/usdc-amount.js'

export const APPROVALS_HELP = `usage: tollgate approvals [list] [--status pending|approved|denied|expired|used|all] [--json]
       tollgate approvals approve <id> [--json]
       tollgate approvals deny <id> [--json]

list     your agents' held payments, newest first (default: pending ones): id, agent, amount,
         URL, why held, and until when
approve  the agent's retry of that payment (same URL, payee and amount) is signed, once
deny     the agent's retry is refused (approval_denied)
An agent's approval policy says what waits: PUT /v1/agents/{address}/approval-policy
{"above": atomic USDC, "new_seller_calls_per_minute": N} (docs/api.md).
Uses the API key.
`

interface Approval {
  id: string
  status: string
  reason: string
  agent?: { address: string; name: string }
  url: string
  method: string
  amount: string
  /** batch-settlement: what it would also deposit into the agent's channel */
  deposit?: string | null
  pay_to: string
  expires_at: string
  decision: { by: string; via: string; at: string } | null
}

function line(a: Approval): string {
  const why = a.reason === 'amount' ? 'above the approval amount' : 'many calls to a new seller'
  const when =
    a.status === 'pending'
      ? `decide by ${a.expires_at}`
      : a.decision
        ? `${a.status} ${a.decision.at} via ${a.decision.via}`
        : a.status
  // a batch-settlement payment also moves a deposit into the agent's channel (refundable, not spent)
  const deposit = a.deposit ? `; + ${formatUsdc(a.deposit)} USDC deposit into the channel, refundable` : ''
  return `${a.id}  ${a.status}  ${a.agent?.name ?? ''}  ${formatUsdc(a.amount)} USDC  ${a.method} ${a.url}  (${why}; ${when}${deposit})`
}

export async function approvalsCommand(args: string[], cmd: Command): Promise<number> {
  const { values: v, positionals } = parseOptions(args, { status: { type: 'string' } }, APPROVALS_HELP, {
    positionals: true,
  })
  if (v.help) {
    cmd.io.stdout(APPROVALS_HELP)
    return EXIT.ok
  }
  const [sub = 'list', id, ...extra] = positionals
  const api = cmd.api()
  if (sub === 'list' && id === undefined) {
    const status = v.status ?? 'pending'
    if (!['pending', 'approved', 'denied', 'expired', 'used', 'all'].includes(status))
      throw new UsageError(`--status is pending, approved, denied, expired, used or all\n\n${APPROVALS_HELP}`)
    const r = await api.user<{ data: Approval[] }>('GET', '/v1/approvals', {
      query: status === 'all' ? {} : { status },
    })
    cmd.out.result(r, r.data.length ? r.data.map(line) : [`no ${status === 'all' ? '' : `${status} `}approvals`])
    return EXIT.ok
  }
  if ((sub === 'approve' || sub === 'deny') && id !== undefined && extra.length === 0) {
    const a = await api.user<Approval>('POST', `/v1/approvals/${encodeURIComponent(id)}/${sub}`)
    cmd.out.result(a, [
      line(a),
      a.status === 'approved'
        ? 'approved: the agent retries the payment with this approval id and it is signed once'
        : 'denied: the agent is refused',
    ])
    return EXIT.ok
  }
  throw new UsageError(APPROVALS_HELP)
}

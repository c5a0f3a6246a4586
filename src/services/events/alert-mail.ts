import type { EventDeps } from './types.js'
import { sql } from 'kysely'

const BATCH = 20

interface Pending {
  id: string
  type: string
  data: Record<string, unknown>
  created_at: Date
  email: string
}

/** One line a person reads, per alert type. */
function alertText(type: string, data: Record<string, unknown>): string {
  const agent = data.agent_name ? `agent "${String(data.agent_name)}"` : 'an agent'
  switch (type) {
    case 'agent.cap_reached':
      return `${agent} reached its ${String(data.window ?? '')} spending cap`
    case 'agent.cap_near':
      return `${agent} has spent ${String(data.percent)}% of its ${String(data.window ?? '')} cap`
    case 'agent.balance_low':
      return `${agent}'s balance is low (${String(data.balance ?? '?')} atomic USDC)`
    case 'payment.failed':
      return `payment ${String(data.payment_id)} failed to settle${data.reason ? `: ${String(data.reason)}` : ''}`
    case 'topup.failed':
      return `a top-up of ${agent} failed${data.error ? `: ${String(data.error)}` : ''}`
    case 'withdrawal.failed':
      return `withdrawal ${String(data.withdrawal_id)} failed${data.reason ? `: ${String(data.reason)}` : ''}`
    case 'webhook.disabled':
      return `webhook endpoint ${String(data.url)} was disabled: its deliveries failed for 3 days`
    default:
      return type
  }
}

/**
 * Emails the alerts not yet sent (cap, balance and failure events, disabled endpoints), to the
 * user's address, through TOLLGATE_SMTP_URL; without it they are marked `skipped` (the dashboard
 * still lists them). Rows are locked while sent, so two workers never send one twice; a relay
 * error marks the alert `failed` (it is not retried: alerts are advisory, the dashboard shows it).
 */
export async function sendPendingAlerts(deps: EventDeps): Promise<number> {
  const { smtpUrl, emailFrom } = deps.config
  return deps.db.transaction().execute(async (trx) => {
    const r = await sql<Pending>`
      select e.id, e.type, e.data, e.created_at, u.email from webhook_events e join users u on u.id = e.user_id
      where e.notify = 'pending' order by e.created_at limit ${BATCH} for update of e skip locked`.execute(trx)
    if (r.rows.length === 0) return 0
    const mark = (id: string, notify: 'sent' | 'skipped' | 'failed') =>
      trx.updateTable('webhook_events').set({ notify }).where('id', '=', id).execute()
    if (!smtpUrl) {
      for (const a of r.rows) await mark(a.id, 'skipped')
      return r.rows.length
    }
    const { default: nodemailer } = await import('nodemailer')
    const transport = nodemailer.createTransport({
      url: smtpUrl,
      connectionTimeout: 10_000,
      greetingTimeout: 10_000,
      socketTimeout: 15_000,
    })
    try {
      for (const a of r.rows) {
        const line = alertText(a.type, a.data)
        const sent = await transport
          .sendMail({
            from: emailFrom,
            to: a.email,
            subject: `Tollgate alert: ${line}`,
            text: `${line}\n\nEvent ${a.id} (${a.type}) at ${a.created_at.toISOString()}.\n\n${JSON.stringify(a.data, null, 2)}\n`,
          })
          .then(
            () => true,
            () => false,
          )
        await mark(a.id, sent ? 'sent' : 'failed')
      }
    } finally {
      transport.close()
    }
    return r.rows.length
  })
}

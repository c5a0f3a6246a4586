/** `tollgate webhooks list|create|delete|test|deliveries|verify`: signed webhook endpoints (docs/cli.md). */
import { readFileSync } from 'node:fs'
import { verifyWebhook, WebhookSignatureError } from '../../client/verify-webhook.js'
import { parseOptions, type Command } from '../command.js'
import { UsageError } from '../errors.js'
import { EXIT } from '../exit-codes.js'
import { table } from '../table.js'

export const WEBHOOKS_HELP = `usage: tollgate webhooks list [--json]
       tollgate webhooks create --url URL --events a,b,… [--cap-near-percent N] [--json]
       tollgate webhooks delete <id> [--json]
       tollgate webhooks test <id> [--json]
       tollgate webhooks deliveries <id> [--limit N] [--json]
       tollgate webhooks verify --header 't=…,v1=…' [--secret whsec_… | TOLLGATE_WEBHOOK_SECRET]
                               [--payload-file F | body on stdin] [--tolerance SECONDS]

Endpoints receive a signed JSON POST per event they subscribe to (payment.settled,
agent.cap_reached, topup.failed, …; docs/api.md lists them). create prints the signing secret
once: keep it. verify checks a received body against its Tollgate-Signature header (exit 0 valid,
1 not). All but verify use the API key.
`

interface Endpoint {
  id: string
  url: string
  events: string[]
  enabled: boolean
  secret?: string
}
interface Delivery {
  event_id: string
  type: string
  status: string
  attempts: number
  response_code: number | null
  latency_ms: number | null
  last_error: string | null
  created_at: string
}

const OPTIONS = {
  url: { type: 'string' },
  events: { type: 'string' },
  'cap-near-percent': { type: 'string' },
  limit: { type: 'string' },
  header: { type: 'string' },
  secret: { type: 'string' },
  'payload-file': { type: 'string' },
  tolerance: { type: 'string' },
} as const

function intOption(raw: string | undefined, name: string): number | undefined {
  if (raw === undefined) return undefined
  if (!/^\d+$/.test(raw)) throw new UsageError(`--${name} expects a whole number, got "${raw}"`)
  return Number(raw)
}

export async function webhooksCommand(args: string[], cmd: Command): Promise<number> {
  const [sub, ...rest] = args
  const { values: v, positionals } = parseOptions(rest, OPTIONS, WEBHOOKS_HELP, { positionals: true })
  if (v.help || sub === undefined || sub === '--help' || sub === '-h') {
    cmd.io.stdout(WEBHOOKS_HELP)
    return sub === undefined ? EXIT.usage : EXIT.ok
  }
  if (sub === 'verify' && positionals.length === 0) return verify(v, cmd)
  const id = positionals[0]
  if (sub === 'list' && !id) return list(cmd)
  if (sub === 'create' && !id) {
    if (!v.url || !v.events) throw new UsageError(`create needs --url and --events\n\n${WEBHOOKS_HELP}`)
    const body = {
      url: v.url,
      events: v.events
        .split(',')
        .map((e) => e.trim())
        .filter(Boolean),
      cap_near_percent: intOption(v['cap-near-percent'], 'cap-near-percent'),
    }
    const e = await cmd.api().user<Endpoint>('POST', '/v1/webhooks', { body })
    cmd.out.result(e, [
      `webhook ${e.id} → ${e.url}`,
      `events: ${e.events.join(', ')}`,
      `signing secret (shown once, keep it): ${e.secret}`,
    ])
    return EXIT.ok
  }
  if (positionals.length !== 1 || !id) throw new UsageError(WEBHOOKS_HELP)
  const path = `/v1/webhooks/${encodeURIComponent(id)}`
  if (sub === 'delete') {
    const r = await cmd.api().user('DELETE', path)
    cmd.out.result(r, `deleted webhook ${id}`)
    return EXIT.ok
  }
  if (sub === 'test') {
    const r = await cmd.api().user<{ event_id: string }>('POST', `${path}/test`)
    cmd.out.result(r, `test event ${r.event_id} queued; see it with tollgate webhooks deliveries ${id}`)
    return EXIT.ok
  }
  if (sub === 'deliveries') return deliveries(cmd, path, intOption(v.limit, 'limit'))
  throw new UsageError(WEBHOOKS_HELP)
}

async function list(cmd: Command): Promise<number> {
  const { data } = await cmd.api().user<{ data: Endpoint[] }>('GET', '/v1/webhooks')
  cmd.out.result({ object: 'list', data }, () =>
    data.length === 0
      ? 'no webhook endpoints: tollgate webhooks create --url … --events …'
      : table(
          [
            { header: 'ID', cell: (e) => e.id },
            { header: 'URL', cell: (e) => e.url },
            { header: 'EVENTS', cell: (e) => e.events.join(',') },
            { header: 'STATE', cell: (e) => (e.enabled ? 'enabled' : 'disabled') },
          ],
          data,
        ),
  )
  return EXIT.ok
}

async function deliveries(cmd: Command, path: string, limit: number | undefined): Promise<number> {
  const { data } = await cmd
    .api()
    .user<{ data: Delivery[] }>('GET', `${path}/deliveries`, { query: limit ? { limit: String(limit) } : {} })
  cmd.out.result({ object: 'list', data }, () =>
    data.length === 0
      ? 'no deliveries yet'
      : table(
          [
            { header: 'TIME', cell: (d) => d.created_at.replace('T', ' ').slice(0, 19) },
            { header: 'EVENT', cell: (d) => `${d.type} ${d.event_id}` },
            { header: 'STATUS', cell: (d) => d.status },
            { header: 'TRIES', cell: (d) => String(d.attempts), align: 'right' },
            { header: 'CODE', cell: (d) => (d.response_code === null ? '-' : String(d.response_code)), align: 'right' },
            { header: 'MS', cell: (d) => (d.latency_ms === null ? '-' : String(d.latency_ms)), align: 'right' },
            { header: 'ERROR', cell: (d) => d.last_error ?? '' },
          ],
          data,
        ),
  )
  return EXIT.ok
}

async function verify(
  v: { header?: string; secret?: string; 'payload-file'?: string; tolerance?: string },
  cmd: Command,
): Promise<number> {
  const secret = v.secret ?? cmd.io.env.TOLLGATE_WEBHOOK_SECRET
  if (!secret) throw new UsageError('verify needs the endpoint secret: --secret or TOLLGATE_WEBHOOK_SECRET')
  if (!v.header) throw new UsageError("verify needs --header 't=…,v1=…' (the Tollgate-Signature header received)")
  let payload: string
  if (v['payload-file']) payload = readFileSync(v['payload-file'], 'utf8')
  else if (cmd.io.readStdin) payload = await cmd.io.readStdin()
  else throw new UsageError('verify needs the body: --payload-file or standard input')
  try {
    const event = verifyWebhook({
      payload,
      header: v.header,
      secret,
      toleranceSeconds: intOption(v.tolerance, 'tolerance'),
    })
    cmd.out.result({ valid: true, id: event.id, type: event.type }, `valid: ${event.type} ${event.id}`)
    return EXIT.ok
  } catch (err) {
    if (!(err instanceof WebhookSignatureError)) throw err
    cmd.out.result({ valid: false, reason: err.reason, message: err.message }, `invalid: ${err.message}`)
    return EXIT.error
  }
}

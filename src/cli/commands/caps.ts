/**
 * `tollgate caps set|show`: an agent's spend caps, typed in USDC (`--daily 0.5`) and sent in atomic
 * units ("500000"), the unit the API takes; `none` removes a cap.
 */
import { formatUsdc } from '../../x402/usdc-amount.js'
import { resolveAgent, type AgentView } from '../agent-ref.js'
import { parseUsdc } from '../amounts.js'
import { parseOptions, type Command } from '../command.js'
import { UsageError } from '../errors.js'
import { EXIT } from '../exit-codes.js'

export const CAPS_HELP = `usage: tollgate caps set [--agent <name|address>] [--per-transaction USDC] [--daily USDC] [--monthly USDC] [--json]
       tollgate caps show [--agent <name|address>] [--json]

Amounts in USDC with up to 6 decimals (0.002 is 2000 atomic units); "none" removes a cap. Caps
left out keep their value. Daily and monthly caps count UTC days and months. Default agent: the
context's (tollgate setup). Uses the API key.
`

export const CAP_OPTIONS = {
  'per-transaction': { type: 'string' },
  daily: { type: 'string' },
  monthly: { type: 'string' },
} as const

type Caps = AgentView['spend_caps']

/** The cap flags that were given, in atomic units (null for "none"). */
export function capsFromOptions(v: { 'per-transaction'?: string; daily?: string; monthly?: string }): Partial<Caps> {
  const out: Partial<Caps> = {}
  for (const [flag, field] of [
    ['per-transaction', 'per_transaction'],
    ['daily', 'daily'],
    ['monthly', 'monthly'],
  ] as const) {
    const x = v[flag]
    if (x === undefined) continue
    out[field] = /^(none|null|off)$/i.test(x) ? null : parseUsdc(x, `--${flag}`)
  }
  return out
}

export function capLines(c: Caps): string[] {
  const cap = (x: string | null) => (x === null ? 'no cap' : `${formatUsdc(x)} USDC`)
  return [
    `  per transaction  ${cap(c.per_transaction)}`,
    `  daily (UTC)      ${cap(c.daily)}`,
    `  monthly (UTC)    ${cap(c.monthly)}`,
  ]
}

export async function capsCommand(args: string[], cmd: Command): Promise<number> {
  const [sub, ...rest] = args
  const { values: v, positionals } = parseOptions(rest, { agent: { type: 'string' }, ...CAP_OPTIONS }, CAPS_HELP, {
    positionals: true,
  })
  if (v.help || sub === '--help' || sub === '-h') {
    cmd.io.stdout(CAPS_HELP)
    return EXIT.ok
  }
  if ((sub !== 'set' && sub !== 'show') || positionals.length) throw new UsageError(CAPS_HELP)
  const caps = capsFromOptions(v)
  if (sub === 'set' && Object.keys(caps).length === 0)
    throw new UsageError(`give at least one of --per-transaction, --daily, --monthly\n\n${CAPS_HELP}`)
  if (sub === 'show' && Object.keys(caps).length)
    throw new UsageError(`caps show takes no amounts: caps set changes them\n\n${CAPS_HELP}`)
  const api = cmd.api()
  const a = await resolveAgent(api, cmd.settings(), v.agent)
  const now =
    sub === 'set'
      ? await api.user<Caps & { agent: string }>('PUT', `/v1/agents/${a.address}/spend-caps`, { body: caps })
      : { ...a.spend_caps, agent: a.address }
  const shown = {
    object: 'spend_caps',
    agent: a.address,
    per_transaction: now.per_transaction,
    daily: now.daily,
    monthly: now.monthly,
  }
  cmd.out.result(shown, [
    `spend caps of "${a.name}" ${a.address}${sub === 'set' ? ' (updated)' : ''}:`,
    ...capLines(shown),
  ])
  return EXIT.ok
}

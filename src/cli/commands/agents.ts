/** `tollgate agents list|create|show`: the user's agents (custodial wallets with caps and top-ups). */
import { formatUsdc } from '../../x402/usdc-amount.js'
import { resolveAgent, type AgentView } from '../agent-ref.js'
import { formatEth } from '../amounts.js'
import { parseOptions, type Command } from '../command.js'
import { ApiError, UsageError } from '../errors.js'
import { EXIT } from '../exit-codes.js'
import { capsFromOptions, CAP_OPTIONS, capLines } from './caps.js'

export const AGENTS_HELP = `usage: tollgate agents list [--json]
       tollgate agents create <name> [--per-transaction USDC] [--daily USDC] [--monthly USDC] [--json]
       tollgate agents show [<name|address>] [--json]

list    your agents: name, wallet address, spend caps
create  a new agent; the platform makes its wallet. Caps in USDC (0.5 = half a dollar); none = no cap
show    one agent (default: the context's) with its wallet balance and top-up settings
Uses the API key (tollgate login).
`

export async function agentsCommand(args: string[], cmd: Command): Promise<number> {
  const [sub, ...rest] = args
  const { values: v, positionals } = parseOptions(rest, CAP_OPTIONS, AGENTS_HELP, { positionals: true })
  if (v.help || sub === '--help' || sub === '-h') {
    cmd.io.stdout(AGENTS_HELP)
    return EXIT.ok
  }
  const api = cmd.api()
  if (sub === 'list' && positionals.length === 0) {
    const { data } = await api.user<{ data: AgentView[] }>('GET', '/v1/agents')
    const mine = cmd.settings().context.agent?.toLowerCase()
    cmd.out.result({ object: 'list', data }, () =>
      data.length === 0
        ? 'no agents yet: tollgate agents create NAME, or tollgate setup'
        : data.map(
            (a) => `${a.address.toLowerCase() === mine ? '*' : ' '} ${a.address}  ${a.name}  caps: ${capSummary(a)}`,
          ),
    )
    return EXIT.ok
  }
  if (sub === 'create' && positionals.length === 1) {
    const caps = capsFromOptions(v)
    const a = await api.user<AgentView>('POST', '/v1/agents', {
      body: { name: positionals[0], ...(Object.keys(caps).length ? { spend_caps: caps } : {}) },
    })
    cmd.out.result(a, [
      `created agent "${a.name}" ${a.address}`,
      `caps: ${capSummary(a)}`,
      `next: tollgate keys create --agent ${a.address} --save (or tollgate setup --agent ${a.address})`,
    ])
    return EXIT.ok
  }
  if (sub === 'show' && positionals.length <= 1) {
    const a = await resolveAgent(api, cmd.settings(), positionals[0])
    let balance: { usdc: string; eth: string } | null = null
    let balanceError: string | null = null
    try {
      balance = await api.user('GET', `/v1/agents/${a.address}/balance`)
    } catch (err) {
      // the agent is still worth showing when the chain does not answer
      if (!(err instanceof ApiError && err.status === 503)) throw err
      balanceError = err.message
    }
    cmd.out.result({ ...a, balance, balance_error: balanceError }, [
      `agent    ${a.name}`,
      `address  ${a.address}`,
      balance
        ? `balance  ${formatUsdc(balance.usdc)} USDC, ${formatEth(balance.eth)} ETH`
        : `balance  unavailable (${balanceError})`,
      'spend caps:',
      ...capLines(a.spend_caps),
      `top-up   ${a.top_up.enabled ? `below ${formatUsdc(a.top_up.threshold)} USDC, add ${formatUsdc(a.top_up.amount)} USDC from the funding wallet` : 'off'}`,
      `created  ${a.created_at}`,
    ])
    return EXIT.ok
  }
  throw new UsageError(AGENTS_HELP)
}

function capSummary(a: AgentView): string {
  const c = a.spend_caps
  const parts = [
    ['per transaction', c.per_transaction],
    ['daily', c.daily],
    ['monthly', c.monthly],
  ]
    .filter(([, x]) => x !== null)
    .map(([k, x]) => `${k} ${formatUsdc(x!)} USDC`)
  return parts.length ? parts.join(', ') : 'none'
}

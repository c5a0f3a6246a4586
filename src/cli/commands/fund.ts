/**
 * `tollgate fund <agent> <USDC>`: USDC from your funding wallet to one of your agents (a funding
 * wallet withdrawal to the agent's address, POST /v1/funding-wallet/withdrawals), waited for until
 * confirmed. `tollgate funding`: the funding wallet's address and balance, and each agent's
 * top-up settings; `tollgate funding top-up <agent> --below <USDC> --amount <USDC> | --off` sets
 * them (PATCH /v1/agents/{address}, docs/topups.md).
 */
import { randomUUID } from 'node:crypto'
import { formatUsdc } from '../../x402/usdc-amount.js'
import { resolveAgent, type AgentView } from '../agent-ref.js'
import { formatEth, parseUsdc } from '../amounts.js'
import { parseOptions, type Command } from '../command.js'
import { UsageError } from '../errors.js'
import { EXIT } from '../exit-codes.js'
import { table } from '../table.js'
import { report, waitFor, type Withdrawal } from './withdraw.js'

export const FUND_HELP = `usage: tollgate fund <agent name|address> <USDC> [--no-wait] [--timeout SECONDS] [--idempotency-key KEY] [--json]

Sends USDC from your funding wallet to one of your agents and waits until the transfer is
confirmed on chain (tollgate funding shows the wallet and its balance). Uses the API key.
`

export const FUNDING_HELP = `usage: tollgate funding [--json]
       tollgate funding top-up <agent name|address> --below <USDC> --amount <USDC> [--json]
       tollgate funding top-up <agent name|address> --off [--json]

funding   your funding wallet (its address, to send USDC and ETH to, and its balance) and each
          agent's top-up settings
top-up    refill the agent from the funding wallet with --amount whenever its balance falls
          below --below (checked every 30 s and after payments; docs/topups.md); --off stops it
Uses the API key. tollgate fund <agent> <USDC> sends USDC once.
`

interface FundingWallet {
  address: string
  balance: { usdc: string; eth: string } | null
  balance_error: string | null
  faucet_available?: boolean
}

export async function fundCommand(args: string[], cmd: Command): Promise<number> {
  const { values: v, positionals } = parseOptions(
    args,
    { 'no-wait': { type: 'boolean' }, timeout: { type: 'string' }, 'idempotency-key': { type: 'string' } },
    FUND_HELP,
    { positionals: true },
  )
  if (v.help) {
    cmd.io.stdout(FUND_HELP)
    return EXIT.ok
  }
  if (positionals.length !== 2) throw new UsageError(FUND_HELP)
  const amount = parseUsdc(positionals[1]!, 'the amount')
  if (BigInt(amount) === 0n) throw new UsageError('the amount: give USDC above 0, such as 5')
  const timeoutS = Number(v.timeout ?? 180)
  if (!Number.isFinite(timeoutS) || timeoutS <= 0) throw new UsageError('--timeout: expected seconds above 0')
  const key = v['idempotency-key'] ?? randomUUID()
  const api = cmd.api()
  const agent = await resolveAgent(api, cmd.settings(), positionals[0])
  cmd.out.note(
    `sending ${formatUsdc(amount)} USDC from your funding wallet to agent "${agent.name}" ${agent.address} (Idempotency-Key ${key})`,
  )
  let w = await api.user<Withdrawal>('POST', '/v1/funding-wallet/withdrawals', {
    body: { to: agent.address, amount, asset: 'USDC' },
    headers: { 'idempotency-key': key },
  })
  if (w.status === 'pending' && !v['no-wait']) w = await waitFor(cmd, api, w, timeoutS)
  return report(cmd, w, key, (x) => `${formatUsdc(x)} USDC`)
}

export async function fundingCommand(args: string[], cmd: Command): Promise<number> {
  if (args[0] === 'top-up') return topUp(args.slice(1), cmd)
  const { values: v, positionals } = parseOptions(args, {}, FUNDING_HELP, { positionals: true })
  if (v.help) {
    cmd.io.stdout(FUNDING_HELP)
    return EXIT.ok
  }
  if (positionals.length) throw new UsageError(FUNDING_HELP)
  const api = cmd.api()
  const [w, agents] = await Promise.all([
    api.user<FundingWallet>('GET', '/v1/funding-wallet'),
    api.user<{ data: AgentView[] }>('GET', '/v1/agents'),
  ])
  const topUps = agents.data.map((a) => ({ agent: a.name, address: a.address, ...a.top_up }))
  cmd.out.result({ object: 'funding', wallet: w, top_ups: topUps }, () => [
    `funding wallet ${w.address}`,
    w.balance
      ? `  balance ${formatUsdc(w.balance.usdc)} USDC, ${formatEth(w.balance.eth)} ETH`
      : `  balance unavailable (${w.balance_error})`,
    `  send USDC (and ETH for gas) to this address on the platform's chain; tollgate fund <agent> <USDC> passes it on`,
    '',
    ...(agents.data.length === 0
      ? ['no agents yet: tollgate agents create NAME']
      : table(
          [
            { header: 'AGENT', cell: (a) => a.name },
            { header: 'ADDRESS', cell: (a) => a.address },
            { header: 'TOP-UP', cell: (a) => (a.top_up.enabled ? 'on' : 'off') },
            { header: 'BELOW USDC', cell: (a) => formatUsdc(a.top_up.threshold), align: 'right' },
            { header: 'AMOUNT USDC', cell: (a) => formatUsdc(a.top_up.amount), align: 'right' },
          ],
          agents.data,
        )),
  ])
  return EXIT.ok
}

async function topUp(args: string[], cmd: Command): Promise<number> {
  const { values: v, positionals } = parseOptions(
    args,
    { below: { type: 'string' }, amount: { type: 'string' }, off: { type: 'boolean' } },
    FUNDING_HELP,
    { positionals: true },
  )
  if (v.help) {
    cmd.io.stdout(FUNDING_HELP)
    return EXIT.ok
  }
  if (positionals.length !== 1) throw new UsageError(FUNDING_HELP)
  if (v.off && (v.below !== undefined || v.amount !== undefined))
    throw new UsageError('--off turns top-ups off: give it alone, or --below and --amount')
  if (!v.off && (v.below === undefined || v.amount === undefined))
    throw new UsageError(`give --below <USDC> and --amount <USDC>, or --off\n\n${FUNDING_HELP}`)
  const top_up = v.off
    ? { enabled: false }
    : {
        enabled: true,
        threshold: parseUsdc(v.below!, '--below'),
        amount: parseUsdc(v.amount!, '--amount'),
        funding_source: 'funding_wallet',
      }
  const api = cmd.api()
  const agent = await resolveAgent(api, cmd.settings(), positionals[0])
  const a = await api.user<AgentView>('PATCH', `/v1/agents/${agent.address}`, { body: { top_up } })
  cmd.out.result(
    a,
    a.top_up.enabled
      ? `agent "${a.name}": topped up with ${formatUsdc(a.top_up.amount)} USDC from the funding wallet whenever its balance falls below ${formatUsdc(a.top_up.threshold)} USDC`
      : `agent "${a.name}": top-ups off`,
  )
  return EXIT.ok
}

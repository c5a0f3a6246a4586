/**
 * `tollgate withdraw`: moves USDC out of an agent wallet, or USDC or ETH out of the funding wallet,
 * to an address (POST /v1/agents/{address}/withdrawals, POST /v1/funding-wallet/withdrawals), and
 * waits with progress until the transfer is confirmed (GET /v1/withdrawals/{id}) unless --no-wait.
 * Each invocation sends its own Idempotency-Key, printed, so a retry with --idempotency-key after
 * a lost answer cannot send the money twice.
 */
import { randomUUID } from 'node:crypto'
import { formatUsdc } from '../../x402/usdc-amount.js'
import { ADDRESS, resolveAgent } from '../agent-ref.js'
import { formatEth, parseEth, parseUsdc } from '../amounts.js'
import type { Api } from '../api-client.js'
import { parseOptions, type Command } from '../command.js'
import { CliError, UsageError } from '../errors.js'
import { EXIT } from '../exit-codes.js'

export const WITHDRAW_HELP = `usage: tollgate withdraw --agent <name|address> --to 0x… --amount <USDC|all> [options]
       tollgate withdraw --funding-wallet --to 0x… --amount <amount|all> [--asset USDC|ETH] [options]
       tollgate withdraw status <withdrawal-id> [--json]

Sends USDC from an agent wallet, or USDC or ETH from your funding wallet, to an address, and waits
until the transfer is confirmed on chain. Amounts in USDC (0.5) or ETH (0.01); "all" is the whole
USDC balance. Uses the API key.

options:
  --no-wait               answer once the withdrawal is accepted (tollgate withdraw status <id> follows it)
  --timeout SECONDS       how long to wait for the confirmation (default 180)
  --idempotency-key KEY   retry an earlier invocation safely: the same key and request is one withdrawal
                          (each invocation makes one and prints it)
`

export interface Withdrawal {
  id: string
  status: 'pending' | 'confirmed' | 'failed'
  to: string
  amount: string
  asset: string
  tx_hash: string | null
  created_at: string
  error?: string | null
}

export async function withdrawCommand(args: string[], cmd: Command): Promise<number> {
  if (args[0] === 'status') return statusCommand(args.slice(1), cmd)
  const { values: v, positionals } = parseOptions(
    args,
    {
      agent: { type: 'string' },
      'funding-wallet': { type: 'boolean' },
      to: { type: 'string' },
      amount: { type: 'string' },
      asset: { type: 'string' },
      'no-wait': { type: 'boolean' },
      timeout: { type: 'string' },
      'idempotency-key': { type: 'string' },
    },
    WITHDRAW_HELP,
  )
  if (v.help) {
    cmd.io.stdout(WITHDRAW_HELP)
    return EXIT.ok
  }
  if (positionals.length) throw new UsageError(WITHDRAW_HELP)
  if ((v.agent === undefined) === !v['funding-wallet'])
    throw new UsageError(`give --agent <name|address> or --funding-wallet\n\n${WITHDRAW_HELP}`)
  if (!v.to || !ADDRESS.test(v.to))
    throw new UsageError(`--to: expected an address (0x and 40 hex digits)${v.to ? `, got "${v.to}"` : ''}`)
  if (!v.amount) throw new UsageError(`--amount: give an amount or "all"\n\n${WITHDRAW_HELP}`)
  const asset = (v.asset ?? 'USDC').toUpperCase()
  if (asset !== 'USDC' && asset !== 'ETH') throw new UsageError('--asset: USDC or ETH')
  if (asset === 'ETH' && !v['funding-wallet'])
    throw new UsageError('--asset ETH: only the funding wallet withdraws ETH; agent wallets hold USDC')
  const timeoutS = Number(v.timeout ?? 180)
  if (!Number.isFinite(timeoutS) || timeoutS <= 0) throw new UsageError('--timeout: expected seconds above 0')
  const key = v['idempotency-key'] ?? randomUUID()
  if (key.length > 255) throw new UsageError('--idempotency-key: at most 255 characters')

  const api = cmd.api()
  let path: string
  let from: string
  let amount: string
  if (v.agent !== undefined) {
    const a = await resolveAgent(api, cmd.settings(), v.agent)
    path = `/v1/agents/${a.address}/withdrawals`
    from = `agent "${a.name}" ${a.address}`
    amount =
      v.amount === 'all'
        ? (await api.user<{ usdc: string }>('GET', `/v1/agents/${a.address}/balance`)).usdc
        : parseUsdc(v.amount, '--amount')
  } else {
    path = '/v1/funding-wallet/withdrawals'
    const w = await api.user<{
      address: string
      balance: { usdc: string; eth: string } | null
      balance_error: string | null
    }>('GET', '/v1/funding-wallet')
    from = `funding wallet ${w.address}`
    if (v.amount === 'all') {
      if (asset === 'ETH')
        throw new UsageError('--amount all is for USDC: give an ETH amount (the transfer pays gas in ETH)')
      if (!w.balance)
        throw new CliError(`the funding wallet's balance is unavailable (${w.balance_error}): give an amount`)
      amount = w.balance.usdc
    } else amount = asset === 'ETH' ? parseEth(v.amount, '--amount') : parseUsdc(v.amount, '--amount')
  }
  if (BigInt(amount) === 0n)
    throw new UsageError(
      v.amount === 'all' ? `nothing to withdraw: the ${from} holds 0 ${asset}` : '--amount: give an amount above 0',
    )
  const shown = (x: string) => (asset === 'ETH' ? `${formatEth(x)} ETH` : `${formatUsdc(x)} USDC`)
  cmd.out.note(`withdrawing ${shown(amount)} from the ${from} to ${v.to} (Idempotency-Key ${key})`)
  let w = await api.user<Withdrawal>('POST', path, {
    body: { to: v.to, amount, ...(v['funding-wallet'] ? { asset } : {}) },
    headers: { 'idempotency-key': key },
  })
  if (w.status === 'pending' && !v['no-wait']) w = await waitFor(cmd, api, w, timeoutS)
  return report(cmd, w, key, shown)
}

async function statusCommand(args: string[], cmd: Command): Promise<number> {
  const { values: v, positionals } = parseOptions(args, {}, WITHDRAW_HELP, { positionals: true })
  if (v.help) {
    cmd.io.stdout(WITHDRAW_HELP)
    return EXIT.ok
  }
  if (positionals.length !== 1) throw new UsageError(WITHDRAW_HELP)
  const w = await cmd.api().user<Withdrawal>('GET', `/v1/withdrawals/${encodeURIComponent(positionals[0]!)}`)
  return report(cmd, w, undefined, (x) => (w.asset === 'ETH' ? `${formatEth(x)} ETH` : `${formatUsdc(x)} USDC`))
}

export async function waitFor(cmd: Command, api: Api, w: Withdrawal, timeoutS: number): Promise<Withdrawal> {
  const progress = cmd.out.progress(`waiting for withdrawal ${w.id} to confirm`)
  const deadline = Date.now() + timeoutS * 1000
  try {
    while (w.status === 'pending') {
      if (Date.now() > deadline) {
        throw new CliError(`withdrawal ${w.id} is still pending after ${timeoutS} s`, {
          code: 'withdrawal_pending',
          toFix: `it goes on without you: tollgate withdraw status ${w.id}`,
        })
      }
      await new Promise((r) => setTimeout(r, 1000))
      w = await api.user<Withdrawal>('GET', `/v1/withdrawals/${encodeURIComponent(w.id)}`)
      progress.update(w.tx_hash ? `transaction ${w.tx_hash}` : 'not sent yet')
    }
  } finally {
    progress.done()
  }
  return w
}

export function report(cmd: Command, w: Withdrawal, key: string | undefined, shown: (x: string) => string): number {
  if (w.status === 'failed') {
    throw new CliError(`withdrawal ${w.id} failed${w.error ? `: ${w.error}` : ''}`, {
      code: 'withdrawal_failed',
      details: { ...w },
    })
  }
  cmd.out.result({ ...w, ...(key ? { idempotency_key: key } : {}) }, [
    `withdrawal ${w.id}: ${shown(w.amount)} to ${w.to}: ${w.status}`,
    ...(w.tx_hash ? [`  transaction ${w.tx_hash}`] : []),
    ...(w.status === 'pending' ? [`  follow it with: tollgate withdraw status ${w.id}`] : []),
  ])
  return EXIT.ok
}

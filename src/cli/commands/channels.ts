/**
 * `tollgate channels`: the agent wallet's batch-settlement channels (issue #34 item 8), one row
 * each: what it deposited, what the seller charged and claimed, what the channel holds and whether
 * a timed withdrawal started (GET /v1/agent/channels with the agent key, or
 * GET /v1/agents/:address/channels with the API key and --agent). `refund` is the cooperative
 * refund of what the seller did not charge, back to the agent wallet (POST …/channels/:id/refund);
 * `withdraw` is the timed withdrawal from the agent wallet itself (POST …/channels/:id/withdraw):
 * the first call starts it, a call once the channel's delay is over finalizes it.
 */
import { formatUsdc } from '../../x402/usdc-amount.js'
import { parseUsdc } from '../amounts.js'
import { resolveAgent } from '../agent-ref.js'
import { parseOptions, type Command } from '../command.js'
import { CliError, UsageError } from '../errors.js'
import { EXIT } from '../exit-codes.js'
import { short, table } from '../table.js'

export const CHANNELS_HELP = `usage: tollgate channels [--agent <name|address>] [--json]
       tollgate channels refund <channel> [--amount <USDC>] [--agent <name|address>] [--json]
       tollgate channels withdraw <channel> [--agent <name|address>] [--json]

The agent wallet's batch-settlement channels, newest first: the seller (receiver), what the agent
deposited, what the seller charged and claimed so far, what the channel holds, what a refund would
return (balance less charged) and whether a timed withdrawal started. Amounts in USDC.
Payments open and top up channels by themselves (tollgate fetch, by default wherever an endpoint
of this platform offers batch-settlement; --no-batch opts out).

  refund <channel>     the cooperative refund: what the seller charged is claimed, everything else
                       (or --amount of it) comes back to the agent wallet now, no gas from it
  withdraw <channel>   the timed withdrawal, sent from the agent wallet (its ETH pays the gas): the
                       first call starts it for what the seller has not claimed, a call after the
                       channel's withdrawal delay finalizes it; in between it says when it is due.
                       Without ETH in the wallet it says how much is needed; refund needs none

<channel> is the channel id (--json shows it whole), a prefix of it, or its short form (0x1234…abcd).
Uses the agent key; with --agent, the API key (any of your agents).
`

interface Channel {
  channel_id: string
  network: string
  receiver: string
  deposited: string
  balance: string
  charged: string
  claimed: string
  refundable: string
  withdraw_requested_at: string | null
  withdrawal?: { status: string } | null
  created_at: string
}

const CHANNEL_ID = /^0x[0-9a-f]{64}$/

export async function channelsCommand(args: string[], cmd: Command): Promise<number> {
  const opts = { agent: { type: 'string' }, amount: { type: 'string' } } as const
  const { values: v, positionals } = parseOptions(args, opts, CHANNELS_HELP, {
    positionals: true,
  })
  if (v.help) {
    cmd.io.stdout(CHANNELS_HELP)
    return EXIT.ok
  }
  const [action, ref, ...extra] = positionals
  if (action !== undefined && action !== 'refund' && action !== 'withdraw')
    throw new UsageError(`unknown channels action "${action}": refund or withdraw (tollgate channels --help)`)
  if (action !== undefined && (ref === undefined || extra.length))
    throw new UsageError(
      `usage: tollgate channels ${action} <channel> (the channel id, a prefix of it, or its short form; tollgate channels lists them)`,
    )
  if (v.amount !== undefined && action !== 'refund') throw new UsageError('--amount goes with tollgate channels refund')
  const amount = v.amount === undefined ? undefined : parseUsdc(v.amount, '--amount')
  const channels = await listChannels(cmd, v.agent)
  if (action === undefined) {
    cmd.out.result({ object: 'list', data: channels }, () =>
      channels.length
        ? [
            ...table(
              [
                { header: 'CHANNEL', cell: (c: Channel) => short(c.channel_id) },
                { header: 'RECEIVER', cell: (c) => short(c.receiver) },
                { header: 'DEPOSITED', cell: (c) => formatUsdc(c.deposited), align: 'right' },
                { header: 'CHARGED', cell: (c) => formatUsdc(c.charged), align: 'right' },
                { header: 'CLAIMED', cell: (c) => formatUsdc(c.claimed), align: 'right' },
                { header: 'BALANCE', cell: (c) => formatUsdc(c.balance), align: 'right' },
                { header: 'REFUNDABLE', cell: (c) => formatUsdc(c.refundable), align: 'right' },
                {
                  header: 'WITHDRAWING',
                  cell: (c) =>
                    c.withdrawal?.status === 'withdrawn'
                      ? 'withdrawn'
                      : c.withdraw_requested_at
                        ? `since ${c.withdraw_requested_at}`
                        : 'no',
                },
              ],
              channels,
            ),
            'amounts in USDC; --json has the whole channel ids and atomic amounts',
          ]
        : 'no channels yet: this agent has paid no endpoint through batch-settlement (tollgate fetch <url> opens one where an endpoint of this platform offers it)',
    )
    return EXIT.ok
  }
  const c = findChannel(channels, ref!)
  if (action === 'refund') return refund(cmd, c, v.agent, amount)
  return withdraw(cmd, c, v.agent)
}

interface Refunded {
  channel_id: string
  refunded: string
  charged: string
  transaction: string
  channel: Channel | null
}

/** The cooperative refund: the agent key's route, or with --agent the owner's. */
async function refund(cmd: Command, c: Channel, agentRef: string | undefined, amount: string | undefined) {
  if (c.refundable === '0')
    throw new CliError(
      `channel ${c.channel_id}: nothing to refund: the seller charged everything the channel holds (${formatUsdc(c.balance)} USDC)`,
      { code: 'nothing_to_refund', details: { channel_id: c.channel_id } },
    )
  const api = cmd.api()
  const s = cmd.settings()
  const body = amount === undefined ? {} : { amount }
  const progress = cmd.out.progress(
    `refunding ${formatUsdc(amount ?? c.refundable)} USDC of channel ${short(c.channel_id)} to the agent wallet (the platform's relayer sends it)`,
  )
  let r: Refunded
  try {
    r =
      agentRef === undefined && s.agentKey
        ? await api.agent<Refunded>('POST', `/v1/agent/channels/${c.channel_id}/refund`, { body })
        : await api.user<Refunded>(
            'POST',
            `/v1/agents/${(await resolveAgent(api, s, agentRef)).address}/channels/${c.channel_id}/refund`,
            { body },
          )
  } catch (err) {
    progress.done()
    throw err
  }
  progress.done(`confirmed in ${r.transaction}`)
  cmd.out.result(r, [
    `refunded ${formatUsdc(r.refunded)} USDC from channel ${c.channel_id} to the agent wallet`,
    `the seller keeps what it charged (${formatUsdc(r.charged)} USDC, claimed in the same transaction); the channel now holds ${formatUsdc(r.channel?.balance ?? r.charged)} USDC, and the next call to this seller deposits again`,
  ])
  return EXIT.ok
}

interface Withdrawal {
  channel_id: string
  action: 'initiated' | 'finalized' | 'none'
  status: 'initiating' | 'waiting' | 'finalizing' | 'withdrawn'
  amount: string
  withdrawn: string | null
  finalize_after: string | null
  due: boolean
  initiate_transaction: string | null
  finalize_transaction: string | null
}

/** The timed withdrawal's next step: the agent key's route, or with --agent the owner's. */
async function withdraw(cmd: Command, c: Channel, agentRef: string | undefined) {
  const api = cmd.api()
  const s = cmd.settings()
  const progress = cmd.out.progress(
    `asking for the timed withdrawal of channel ${short(c.channel_id)} (sent from the agent wallet, which pays the gas)`,
  )
  let r: Withdrawal
  try {
    r =
      agentRef === undefined && s.agentKey
        ? await api.agent<Withdrawal>('POST', `/v1/agent/channels/${c.channel_id}/withdraw`, { body: {} })
        : await api.user<Withdrawal>(
            'POST',
            `/v1/agents/${(await resolveAgent(api, s, agentRef)).address}/channels/${c.channel_id}/withdraw`,
            { body: {} },
          )
  } catch (err) {
    progress.done()
    throw err
  }
  progress.done()
  cmd.out.result(r, withdrawalLines(r))
  return EXIT.ok
}

/** What the withdrawal's answer says, for a person. */
function withdrawalLines(r: Withdrawal): string[] {
  const id = r.channel_id
  const due = r.finalize_after ?? 'the end of the delay'
  switch (r.status) {
    case 'initiating':
      return [
        `the withdrawal of ${formatUsdc(r.amount)} USDC from channel ${id} is sent (${r.initiate_transaction}) and not mined yet; run tollgate channels withdraw ${short(id)} again to follow it`,
      ]
    case 'waiting':
      return r.action === 'initiated'
        ? [
            `started the timed withdrawal of ${formatUsdc(r.amount)} USDC from channel ${id} (${r.initiate_transaction})`,
            `it can be finalized after ${due}: run tollgate channels withdraw ${short(id)} again then; the seller claims what it charged meanwhile`,
          ]
        : [
            r.due
              ? `the withdrawal from channel ${id} is due: run tollgate channels withdraw ${short(id)} again to finalize it`
              : `the withdrawal of ${formatUsdc(r.amount)} USDC from channel ${id} is not due yet: it can be finalized after ${due}`,
          ]
    case 'finalizing':
      return [
        `the withdrawal from channel ${id} is being finalized (${r.finalize_transaction}, not mined yet); run tollgate channels withdraw ${short(id)} again to follow it`,
      ]
    default:
      return [
        `${r.action === 'finalized' ? 'withdrew' : 'already withdrew'} ${formatUsdc(r.withdrawn ?? '0')} USDC from channel ${id} to the agent wallet${r.finalize_transaction ? ` (${r.finalize_transaction})` : ''}`,
      ]
  }
}

/** The channels of the agent: its own key, or with --agent (or the context's agent and no agent key) the API key. */
async function listChannels(cmd: Command, agentRef: string | undefined): Promise<Channel[]> {
  const api = cmd.api()
  const s = cmd.settings()
  if (agentRef === undefined && s.agentKey)
    return (await api.agent<{ data: Channel[] }>('GET', '/v1/agent/channels')).data
  const a = await resolveAgent(api, s, agentRef)
  return (await api.user<{ data: Channel[] }>('GET', `/v1/agents/${a.address}/channels`)).data
}

/** The channel `ref` names: its whole id, a prefix (at least 4 hex digits) or the short form `0x1234…abcd`. */
function findChannel(channels: Channel[], ref: string): Channel {
  const r = ref.trim().toLowerCase()
  const [head, tail] = r.includes('…') ? r.split('…') : r.includes('...') ? r.split('...') : [r, '']
  if (!/^0x[0-9a-f]{4,64}$/.test(head!) || !/^[0-9a-f]{0,60}$/.test(tail ?? ''))
    throw new UsageError(
      `not a channel id: ${ref} (0x and 64 hex digits, a prefix of at least 4 digits, or the short form tollgate channels shows)`,
    )
  const matches = channels.filter((c) => c.channel_id.startsWith(head!) && c.channel_id.endsWith(tail ?? ''))
  if (CHANNEL_ID.test(r) && matches.length === 0)
    throw new CliError(`this agent has no channel ${r} (tollgate channels lists its channels)`, { code: 'not_found' })
  if (matches.length === 0)
    throw new CliError(`this agent has no channel matching ${ref} (tollgate channels lists its channels)`, {
      code: 'not_found',
    })
  if (matches.length > 1)
    throw new UsageError(
      `${matches.length} channels match ${ref}: give more of the id (${matches.map((c) => c.channel_id).join(', ')})`,
    )
  return matches[0]!
}

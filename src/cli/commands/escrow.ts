/**
 * `tollgate escrow`: the agent wallet's escrow accounts for vouchers (x402 `deferred`) per seller
 * — balance, thawing amount and end, outstanding vouchers (GET /v1/agent/escrow) — and taking funds
 * back: `thaw` starts the thawing period on what vouchers do not hold, `withdraw` moves what
 * finished thawing to the agent wallet (both POST /v1/agent/escrow/flush: the escrow's
 * flushWithAuthorization, sent by the platform's relayer, no gas).
 */
import { formatUsdc } from '../../x402/usdc-amount.js'
import { ADDRESS } from '../agent-ref.js'
import { parseUsdc } from '../amounts.js'
import { parseOptions, type Command } from '../command.js'
import { CliError, UsageError } from '../errors.js'
import { EXIT } from '../exit-codes.js'

export const ESCROW_HELP = `usage: tollgate escrow [--json]
       tollgate escrow thaw <seller> [--json]
       tollgate escrow withdraw <seller> [--json]
       tollgate escrow deposit <seller> <USDC> [--json]

The agent wallet's escrow accounts for vouchers (deferred payments), per seller: the balance, what
is thawing and when it can be withdrawn, and the vouchers the seller has not collected yet.
Payments deposit by themselves when the balance is short (tollgate fetch).

  thaw <seller>       start the thawing period on everything in the account (the seller can still
                      collect the vouchers it holds until it ends)
  withdraw <seller>   move what finished thawing to the agent wallet (the rest starts thawing)
  deposit <seller> <USDC>
                      move USDC from the agent wallet into the account (not counted against the caps)

Each is one escrow call signed by the agent key and sent by the platform (no gas). Uses the agent key.
`

interface Account {
  seller: string
  asset: string
  balance: string
  thawing_amount: string
  thaw_ends_at: string | null
  withdrawable: boolean
  available: string
  outstanding: string
  vouchers: Array<{ id: string; nonce: string; value_aggregate: string; collected: string; outstanding: string }>
}
interface Overview {
  escrow: string
  address: string
  accounts: Account[]
}
interface Flush {
  transaction: string
  withdrawn: string
  account: Account
}

function accountLines(a: Account): string[] {
  const lines = [
    `seller ${a.seller}`,
    `  balance      ${formatUsdc(a.balance)} USDC (${formatUsdc(a.available)} available to new vouchers)`,
    `  thawing      ${a.thaw_ends_at ? `${formatUsdc(a.thawing_amount)} USDC, withdrawable from ${a.thaw_ends_at}` : 'nothing'}`,
    `  outstanding  ${formatUsdc(a.outstanding)} USDC in ${a.vouchers.length} voucher${a.vouchers.length === 1 ? '' : 's'} not collected yet`,
  ]
  for (const v of a.vouchers)
    lines.push(
      `    ${v.id} #${v.nonce}: ${formatUsdc(v.value_aggregate)} USDC signed, ${formatUsdc(v.collected)} collected`,
    )
  return lines
}

export async function escrowCommand(args: string[], cmd: Command): Promise<number> {
  const { values: v, positionals } = parseOptions(args, {}, ESCROW_HELP, { positionals: true })
  if (v.help) {
    cmd.io.stdout(ESCROW_HELP)
    return EXIT.ok
  }
  const [action, seller, amountText, ...extra] = positionals
  const api = cmd.api()
  if (action === undefined) {
    const o = await api.agent<Overview>('GET', '/v1/agent/escrow')
    cmd.out.result(o, () => [
      `agent ${o.address}, escrow ${o.escrow}`,
      ...(o.accounts.length
        ? o.accounts.flatMap(accountLines)
        : ['no escrow accounts yet: the agent has paid no seller with vouchers']),
    ])
    return EXIT.ok
  }
  if (action !== 'thaw' && action !== 'withdraw' && action !== 'deposit')
    throw new UsageError(`unknown escrow action "${action}": thaw, withdraw or deposit (tollgate escrow --help)`)
  if (action === 'deposit' ? !seller || !amountText || extra.length : !seller || amountText !== undefined)
    throw new UsageError(`usage: tollgate escrow ${action} <seller address>${action === 'deposit' ? ' <USDC>' : ''}`)
  if (!ADDRESS.test(seller!))
    throw new UsageError(
      `not an address: ${seller} (the seller is the payTo of its endpoints; tollgate escrow lists them)`,
    )
  if (action === 'deposit') {
    const amount = parseUsdc(amountText!, 'the amount')
    const progress = cmd.out.progress(
      `depositing ${formatUsdc(amount)} USDC from the agent wallet into the escrow (the platform's relayer sends it)`,
    )
    let d: { transactions: string[]; deposited: string; account: Account }
    try {
      d = await api.agent('POST', '/v1/agent/escrow/deposit', { body: { seller, amount } })
    } catch (err) {
      progress.done()
      throw err
    }
    progress.done(`confirmed in ${d.transactions.join(', ')}`)
    cmd.out.result(d, [`deposited ${formatUsdc(d.deposited)} USDC for seller ${seller}`, ...accountLines(d.account)])
    return EXIT.ok
  }
  const o = await api.agent<Overview>('GET', '/v1/agent/escrow')
  const a = o.accounts.find((x) => x.seller.toLowerCase() === seller.toLowerCase())
  if (!a || a.balance === '0')
    throw new CliError(
      `the escrow holds nothing for this agent with seller ${seller}: nothing to ${action} (tollgate escrow lists the accounts)`,
      { code: 'escrow_empty' },
    )
  if (action === 'thaw' && a.available === '0') {
    throw new CliError(
      `everything (${formatUsdc(a.thawing_amount)} USDC) is thawing already, withdrawable from ${a.thaw_ends_at}: run tollgate escrow withdraw ${seller} then`,
      { code: 'escrow_thawing' },
    )
  }
  if (action === 'withdraw') {
    if (a.thaw_ends_at === null)
      throw new CliError(
        `nothing is thawing with seller ${seller}: run tollgate escrow thaw ${seller} first, then withdraw once the thawing period ends`,
        { code: 'escrow_not_thawing' },
      )
    // the chain's clock decides, not this machine's
    if (!a.withdrawable)
      throw new CliError(
        `${formatUsdc(a.thawing_amount)} USDC is thawing until ${a.thaw_ends_at}: run this again after that`,
        { code: 'escrow_thawing' },
      )
  }
  const progress = cmd.out.progress(
    `${action === 'thaw' ? 'starting to thaw' : 'withdrawing'} in the escrow (one transaction from the platform's relayer)`,
  )
  let r: Flush
  try {
    r = await api.agent<Flush>('POST', '/v1/agent/escrow/flush', { body: { seller } })
  } catch (err) {
    progress.done()
    throw err
  }
  progress.done(`confirmed in ${r.transaction}`)
  const n = r.account
  cmd.out.result(r, [
    ...(r.withdrawn !== '0' ? [`withdrew ${formatUsdc(r.withdrawn)} USDC to the agent wallet`] : []),
    ...(n.thaw_ends_at
      ? [
          `thawing ${formatUsdc(n.thawing_amount)} USDC until ${n.thaw_ends_at}: then tollgate escrow withdraw ${seller}`,
        ]
      : []),
    ...accountLines(n),
  ])
  return EXIT.ok
}

/* global URLSearchParams */
// Transactions: 20 a page, newest first, filters, and export links for the whole filtered history.
import { api } from './api.js'
import { h, table } from './dom.js'
import { short, time, units } from './format.js'
import { act, pager } from './ui.js'

/** What a page lists unless failed and expired attempts are asked for: voided (not served) and failed (not settled, expired included) are left out. */
export const SUCCESSFUL_STATUSES = 'verified,served,settling,settled,pending,confirmed'

/** An address as the user knows it: the agent's name (with the address on hover), else the short address. */
export function party(address, names) {
  const name = address && names.get(address.toLowerCase())
  return name ? h('span', { title: address, class: 'party' }, name) : short(address)
}

/** The user's agents (and funding wallet) by lower-case address, for naming payers and receivers. */
export async function walletNames() {
  const [agents, funding] = await Promise.all([
    api('GET', '/v1/agents'),
    api('GET', '/v1/funding-wallet').catch(() => null),
  ])
  const names = new Map(agents.data.map((a) => [a.address.toLowerCase(), a.name]))
  if (funding) names.set(funding.address.toLowerCase(), 'funding wallet')
  return names
}

/** One history row: a payment or a withdrawal, with the user's wallets named. */
export function transactionRow(t, names) {
  const amount =
    t.kind === 'withdrawal' && t.asset === 'ETH' ? `${units(t.value, 18)} ETH` : `${units(t.value, 6)} USDC`
  const what = t.kind === 'withdrawal' ? 'withdrawal' : `${t.method} ${t.resource}`
  return h(
    'tr',
    { 'data-kind': t.kind, 'data-status': t.status },
    h('td', {}, time(t.created_at)),
    h(
      'td',
      { class: ['failed', 'voided'].includes(t.status) ? 'error' : undefined, title: t.failure_reason ?? undefined },
      t.status,
    ),
    h('td', {}, amount),
    h('td', {}, party(t.payer, names)),
    h('td', {}, party(t.pay_to, names)),
    h('td', {}, what),
    h('td', {}, short(t.tx_hash)),
  )
}

export const TRANSACTION_HEADERS = ['Created', 'Status', 'Amount', 'Payer', 'Pay to', 'Resource', 'Transaction']

export async function transactionsView(show) {
  const names = await walletNames()
  const role = h(
    'select',
    { id: 'tx-role' },
    h('option', { value: '' }, 'all'),
    h('option', { value: 'buyer' }, 'buyer: paid by my agents'),
    h('option', { value: 'seller' }, 'seller: paid to my endpoints'),
  )
  const from = h('input', { id: 'tx-from', type: 'date' })
  const attempts = h('input', { id: 'tx-attempts', type: 'checkbox' })
  const list = h('div')
  const exports = h('p', { class: 'exports' })
  // the filters of the list on screen: Apply takes the controls' values; Older and the export links
  // keep them (a role picked but not applied must not change what Older continues)
  let applied = {}
  // the page leaves failed and expired attempts out unless they were asked for (when Apply was pressed)
  let listed = {}
  const apply = () => {
    applied = { ...(role.value && { role: role.value }), ...(from.value && { from: `${from.value}T00:00:00Z` }) }
    listed = attempts.checked ? {} : { status: SUCCESSFUL_STATUSES }
    return load()
  }
  const query = (extra) => new URLSearchParams({ ...extra, ...applied })
  // the downloads are the whole filtered history, attempts included (a status column tells them apart)
  const download = (path, format) =>
    h('a', { href: `${path}?${query({ format })}`, download: '' }, `${path.slice(4)}.${format}`)
  const row = (t) => transactionRow(t, names)
  // newest first; the export links keep the API's default (oldest first, a sync order)
  async function load(cursor) {
    const page = await api(
      'GET',
      `/v1/transactions?${query({ limit: '20', order: 'desc', ...listed, ...(cursor && { cursor }) })}`,
    )
    const links = [
      ['/v1/transactions', 'csv'],
      ['/v1/transactions', 'ndjson'],
      ['/v1/payment-events', 'csv'],
      ['/v1/payment-events', 'ndjson'],
    ]
    exports.replaceChildren(
      'Download the whole filtered history: ',
      ...links.flatMap(([p, f], i) => [i ? ' · ' : '', download(p, f)]),
    )
    list.replaceChildren(
      table(TRANSACTION_HEADERS, page.data.map(row), cursor ? 'No older transactions.' : 'No transactions yet.'),
      pager(cursor, page, load),
    )
  }
  const applyButton = h('button', { type: 'submit' }, 'Apply')
  const filters = h(
    'form',
    {
      class: 'inline',
      onsubmit: (e) => {
        e.preventDefault()
        act(applyButton, apply)
      },
    },
    h('label', { for: 'tx-role' }, 'Role'),
    role,
    h('label', { for: 'tx-from' }, 'From (UTC)'),
    from,
    h('span', { class: 'check' }, attempts, h('label', { for: 'tx-attempts' }, 'Show failed and expired attempts')),
    applyButton,
  )
  await apply()
  show(
    h('h1', {}, 'Transactions'),
    h(
      'p',
      { class: 'hint' },
      'Payments by your agents and to your endpoints, and withdrawals from your wallets, newest first, 20 per page. Failed and expired attempts (voided, failed) show when you ask for them.',
    ),
    filters,
    exports,
    list,
  )
}

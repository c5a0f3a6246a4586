/* global URLSearchParams */
// Transactions: 20 a page, newest first, filters, and export links for the whole filtered history.
import { api } from './api.js'
import { h, table } from './dom.js'
import { short, time, units } from './format.js'
import { act, pager } from './ui.js'

export async function transactionsView(show) {
  const role = h('select', { id: 'tx-role' }, h('option', { value: '' }, 'all'), h('option', { value: 'buyer' }, 'buyer: paid by my agents'), h('option', { value: 'seller' }, 'seller: paid to my endpoints'))
  const from = h('input', { id: 'tx-from', type: 'date' })
  const list = h('div')
  const exports = h('p', { class: 'exports' })
  // the filters of the list on screen: Apply takes the controls' values; Older and the export links
  // keep them (a role picked but not applied must not change what Older continues)
  let applied = {}
  const apply = () => {
    applied = { ...(role.value && { role: role.value }), ...(from.value && { from: `${from.value}T00:00:00Z` }) }
    return load()
  }
  const query = (extra) => new URLSearchParams({ ...extra, ...applied })
  const download = (path, format) => h('a', { href: `${path}?${query({ format })}`, download: '' }, `${path.slice(4)}.${format}`)
  const row = (t) =>
    h('tr', {}, h('td', {}, time(t.created_at)), h('td', {}, t.status), h('td', {}, `${units(t.value, 6)} USDC`), h('td', {}, short(t.payer)), h('td', {}, short(t.pay_to)), h('td', {}, `${t.method} ${t.resource}`), h('td', {}, short(t.tx_hash)))
  // newest first; the export links keep the API's default (oldest first, a sync order)
  async function load(cursor) {
    const page = await api('GET', `/v1/transactions?${query({ limit: '20', order: 'desc', ...(cursor && { cursor }) })}`)
    const links = [['/v1/transactions', 'csv'], ['/v1/transactions', 'ndjson'], ['/v1/payment-events', 'csv'], ['/v1/payment-events', 'ndjson']]
    exports.replaceChildren('Download the whole filtered history: ', ...links.flatMap(([p, f], i) => [i ? ' · ' : '', download(p, f)]))
    list.replaceChildren(
      table(['Created', 'Status', 'Amount', 'Payer', 'Pay to', 'Resource', 'Transaction'], page.data.map(row), cursor ? 'No older transactions.' : 'No transactions yet.'),
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
    applyButton,
  )
  await apply()
  show(h('h1', {}, 'Transactions'), h('p', { class: 'hint' }, 'Payments by your agents and to your endpoints, newest first, 20 per page.'), filters, exports, list)
}

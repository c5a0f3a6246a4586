// Transactions: 20 a page, newest first, filters and search, and export links for the whole
// filtered history; the recent top-ups under it.
import { api } from './api.js'
import { emptyState, errorSlot, field, h, table } from './dom.js'
import { short, time, units } from './format.js'
import { onSubmit, pager } from './ui.js'

/** What a page lists unless failed and expired attempts are asked for: voided (not served) and failed (not settled, expired included) are left out. */
export const SUCCESSFUL_STATUSES = 'verified,served,settling,settled,pending,confirmed'

/** An address as the user knows it: the agent's name (with the address on hover), else the short address. */
export function party(address, names) {
  const name = address && names.get(address.toLowerCase())
  return name ? h('span', { title: address, class: 'party' }, name) : short(address)
}

/** The user's agents (and funding wallet) by lower-case address, for naming payers and receivers. */
export async function walletNames() {
  return (await wallets()).names
}

async function wallets() {
  const [agents, funding] = await Promise.all([
    api('GET', '/v1/agents'),
    api('GET', '/v1/funding-wallet').catch(() => null),
  ])
  const names = new Map(agents.data.map((a) => [a.address.toLowerCase(), a.name]))
  if (funding) names.set(funding.address.toLowerCase(), 'funding wallet')
  return { names, agents: agents.data }
}

/** The payee: the seller's name on this platform (its endpoint path and address on hover), else as `party`. */
function payee(t, names) {
  if (!t.seller_name) return party(t.pay_to, names)
  return h('span', { title: `${t.endpoint_path} · ${t.pay_to}`, class: 'party' }, t.seller_name)
}

/** The link to a payment's page (payments only: a withdrawal or a sign-in has none). */
const paymentLink = (t) =>
  t.kind === 'payment' &&
  h('a', { href: `#/payments/${t.id}`, 'aria-label': `Details of the payment of ${time(t.created_at)}` }, 'Details')

/** One history row: a payment or a withdrawal, with the user's wallets named. */
export function transactionRow(t, names) {
  const amount =
    t.kind === 'withdrawal' && t.asset === 'ETH' ? `${units(t.value, 18)} ETH` : `${units(t.value, 6)} USDC`
  const what = t.kind === 'withdrawal' ? 'withdrawal' : `${t.method} ${t.resource}`
  return h(
    'tr',
    { 'data-kind': t.kind, 'data-status': t.status },
    h('td', { class: 'nowrap' }, time(t.created_at)),
    h(
      'td',
      { class: ['failed', 'voided'].includes(t.status) ? 'error' : undefined, title: t.failure_reason ?? undefined },
      t.status,
    ),
    h('td', { class: 'nowrap' }, amount),
    h('td', {}, party(t.payer, names)),
    h('td', {}, payee(t, names)),
    h('td', {}, what),
    h('td', {}, short(t.tx_hash)),
    h('td', {}, paymentLink(t)),
  )
}

export const TRANSACTION_HEADERS = ['Created', 'Status', 'Amount', 'Payer', 'Pay to', 'Resource', 'Transaction', '']

/** The statuses a search can pick, payments' then withdrawals'. */
const STATUSES = ['verified', 'served', 'settling', 'settled', 'voided', 'failed', 'pending', 'confirmed']

export async function transactionsView(show) {
  const { names, agents } = await wallets()
  const controls = filterControls(agents)
  const list = h('div', { id: 'tx-list' })
  const exports = h('p', { class: 'exports' })
  // the filters of the list on screen: Apply takes the controls' values; Older and the export links
  // keep them (a role picked but not applied must not change what Older continues)
  let applied = {}
  // the page leaves failed and expired attempts out unless they were asked for (when Apply was pressed)
  let listed = {}
  const apply = () => {
    applied = filterValues(controls)
    // a status asked for is shown whatever it is; otherwise attempts only when asked for
    listed = controls.attempts.checked || controls.status.value ? {} : { status: SUCCESSFUL_STATUSES }
    return load()
  }
  const searching = () => ['agent', 'endpoint', 'seller', 'status', 'role', 'from'].some((k) => applied[k])
  const query = (extra) => new URLSearchParams({ ...extra, ...applied })
  const row = (t) => transactionRow(t, names)
  // newest first; the export links keep the API's default (oldest first, a sync order)
  async function load(cursor) {
    const page = await api(
      'GET',
      `/v1/transactions?${query({ limit: '20', order: 'desc', ...listed, ...(cursor && { cursor }) })}`,
    )
    exports.replaceChildren(...exportLinks(query))
    list.replaceChildren(
      table(TRANSACTION_HEADERS, page.data.map(row), noTransactions(cursor, searching)),
      pager(cursor, page, load),
    )
  }
  const filters = filtersForm(controls, apply)
  await apply()
  const topUps = await topUpsSection()
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
    topUps,
  )
}

/** The search's controls: role, from, attempts, agent (one of `agents`), status, endpoint and seller. */
function filterControls(agents) {
  const role = h(
    'select',
    { id: 'tx-role' },
    h('option', { value: '' }, 'all'),
    h('option', { value: 'buyer' }, 'buyer: paid by my agents'),
    h('option', { value: 'seller' }, 'seller: paid to my endpoints'),
  )
  const from = h('input', { id: 'tx-from', type: 'date' })
  const attempts = h('input', { id: 'tx-attempts', type: 'checkbox' })
  const agent = h(
    'select',
    { id: 'tx-agent', 'data-param': 'agent' },
    h('option', { value: '' }, 'any'),
    agents.map((a) => h('option', { value: a.address }, a.name)),
  )
  const status = h(
    'select',
    { id: 'tx-status', 'data-param': 'status' },
    h('option', { value: '' }, 'any'),
    STATUSES.map((x) => h('option', { value: x }, x)),
  )
  const endpoint = h('input', {
    id: 'tx-endpoint',
    type: 'search',
    maxlength: 200,
    placeholder: 'e.g. uuid or /acme/',
    'data-param': 'endpoint',
  })
  const seller = h('input', {
    id: 'tx-seller',
    type: 'search',
    maxlength: 200,
    placeholder: 'name or namespace',
    'data-param': 'seller',
  })
  return { role, from, attempts, agent, status, endpoint, seller }
}

/** The filters the controls hold now, as query parameters (the empty ones left out). */
function filterValues({ role, from, agent, endpoint, seller, status }) {
  return {
    ...(role.value && { role: role.value }),
    ...(from.value && { from: `${from.value}T00:00:00Z` }),
    ...(agent.value && { agent: agent.value }),
    ...(endpoint.value.trim() && { endpoint: endpoint.value.trim() }),
    ...(seller.value.trim() && { seller: seller.value.trim() }),
    ...(status.value && { status: status.value }),
  }
}

/** The search form: the controls, the attempts checkbox and Apply (which runs `apply`). */
function filtersForm({ role, from, attempts, agent, status, endpoint, seller }, apply) {
  const applyButton = h('button', { type: 'submit' }, 'Apply')
  const error = errorSlot()
  return h(
    'form',
    { class: 'search-form', id: 'tx-search', role: 'search', onsubmit: onSubmit(applyButton, error, apply) },
    field('Endpoint', endpoint),
    field('Seller', seller),
    field('Agent', agent),
    field('Status', status),
    field('Role', role),
    field('From (UTC)', from),
    h(
      'div',
      { class: 'search-actions' },
      h('span', { class: 'check' }, attempts, h('label', { for: 'tx-attempts' }, 'Show failed and expired attempts')),
      applyButton,
    ),
    error,
  )
}

/**
 * The export links, with the filters `query` adds: the downloads are the whole filtered history,
 * attempts included (a status column tells them apart).
 */
function exportLinks(query) {
  const download = (path, format) =>
    h('a', { href: `${path}?${query({ format })}`, download: '' }, `${path.slice(4)}.${format}`)
  const links = [
    ['/v1/transactions', 'csv'],
    ['/v1/transactions', 'ndjson'],
    ['/v1/payment-events', 'csv'],
    ['/v1/payment-events', 'ndjson'],
  ]
  return ['Download the whole filtered history: ', ...links.flatMap(([p, f], i) => [i ? ' · ' : '', download(p, f)])]
}

/** What an empty page says: past the last page, no match for the search (`searching()`), or none yet. */
function noTransactions(cursor, searching) {
  return cursor
    ? 'No older transactions.'
    : searching()
      ? emptyState('No transaction matches this search.', 'Clear a field or pick “any”, then Apply.')
      : emptyState(
          'No transactions yet.',
          'Payments appear here once an agent of yours pays for a call (',
          h('a', { href: '#/overview' }, 'the three steps on Overview'),
          ') or someone pays an endpoint you ',
          h('a', { href: '#/sellers' }, 'publish'),
          '.',
        )
}

/** The latest top-ups of all the user's agents, from the funding wallet (GET /v1/top-ups). */
async function topUpsSection() {
  const { data } = await api('GET', '/v1/top-ups?limit=10')
  const row = (u) =>
    h(
      'tr',
      { 'data-kind': 'top_up', 'data-status': u.status },
      h('td', {}, time(u.created_at)),
      h('td', { class: u.status === 'failed' ? 'error' : undefined, title: u.error ?? undefined }, u.status),
      h('td', {}, `${units(u.amount, 6)} USDC`),
      h('td', {}, 'funding wallet'),
      h('td', {}, h('a', { href: `#/agents/${u.agent}`, title: u.agent }, u.agent_name)),
      h('td', {}, short(u.tx_hash)),
    )
  return h(
    'section',
    { id: 'tx-top-ups', 'aria-labelledby': 'tx-top-ups-title' },
    h('h2', { id: 'tx-top-ups-title' }, 'Top-ups'),
    h(
      'p',
      { class: 'hint' },
      'The latest 10 transfers from your funding wallet to your agents; all of an agent’s on its page.',
    ),
    table(
      ['Created', 'Status', 'Amount', 'From', 'To agent', 'Transaction'],
      data.map(row),
      emptyState(
        'No top-ups yet.',
        'Turn top-ups on for an agent (its page, “Caps & allowlist”) and your funding wallet refills it whenever its balance runs low.',
      ),
    ),
  )
}

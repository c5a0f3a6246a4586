/* global URLSearchParams */
// Marketplace: browse and filter the x402 agents buyers can pay here (GET /api/v1/agents/marketplace),
// each entry's endpoints with their price and a `tollgate fetch` command to copy.
import { api } from './api.js'
import { copyButton, h, table } from './dom.js'
import { units } from './format.js'
import { act } from './ui.js'

/** The CLI line that pays an endpoint (docs/buyer.md): GET as is, a body for the other methods. */
export function fetchCommand(url, method) {
  const quoted = `'${url.replace(/'/g, "'\\''")}'`
  return method === 'GET'
    ? `npx tollgate fetch -X GET ${quoted}`
    : `npx tollgate fetch -X ${method} ${quoted} --json '{}'`
}

export async function marketplaceView(show) {
  const all = await api('GET', '/api/v1/agents/marketplace')
  const categories = [...new Set(all.map((e) => e.category))].sort()
  const search = h('input', {
    id: 'market-search',
    type: 'search',
    maxlength: 200,
    placeholder: 'name, description, tag…',
  })
  const category = h(
    'select',
    { id: 'market-category' },
    h('option', { value: '' }, 'all'),
    categories.map((c) => h('option', { value: c }, c)),
  )
  const source = h(
    'select',
    { id: 'market-source' },
    h('option', { value: '' }, 'all'),
    ['platform', 'catalog', 'bazaar'].map((s) => h('option', { value: s }, s)),
  )
  const results = h('div', { id: 'market-results' })
  const count = h('p', { id: 'market-count', role: 'status' })
  const render = (entries) => {
    count.textContent = `${entries.length} ${entries.length === 1 ? 'entry' : 'entries'}`
    results.replaceChildren(
      ...(entries.length ? entries.map(entryCard) : [h('p', { class: 'empty' }, 'No entry matches these filters.')]),
    )
  }
  const apply = h('button', { type: 'submit' }, 'Filter')
  const form = h(
    'form',
    {
      class: 'inline',
      id: 'market-filters',
      onsubmit: (e) => {
        e.preventDefault()
        act(apply, async () => {
          const q = new URLSearchParams({
            ...(search.value.trim() && { search: search.value.trim() }),
            ...(category.value && { category: category.value }),
            ...(source.value && { source: source.value }),
          })
          render(await api('GET', `/api/v1/agents/marketplace?${q}`))
        })
      },
    },
    h('label', { for: 'market-search' }, 'Search'),
    search,
    h('label', { for: 'market-category' }, 'Category'),
    category,
    h('label', { for: 'market-source' }, 'Source'),
    source,
    apply,
  )
  render(all)
  show(
    h('h1', {}, 'Marketplace'),
    h(
      'p',
      { class: 'hint' },
      'x402 APIs your agents can pay on this deployment’s network. Copy a command to call one with an agent key (TOLLGATE_AGENT_KEY).',
    ),
    form,
    count,
    results,
  )
}

function entryCard(e) {
  const endpoints = h('div', { hidden: true, id: `market-endpoints-${e.id}` })
  const toggle = h(
    'button',
    { type: 'button', class: 'plain', 'aria-expanded': 'false', 'aria-controls': `market-endpoints-${e.id}` },
    `Endpoints (${e.endpoints.length})`,
  )
  toggle.addEventListener('click', () => {
    const open = endpoints.hidden
    if (open && !endpoints.childElementCount) endpoints.append(endpointTable(e))
    endpoints.hidden = !open
    toggle.setAttribute('aria-expanded', String(open))
  })
  return h(
    'section',
    { class: 'market-entry', 'data-entry': e.id, 'aria-labelledby': `market-name-${e.id}` },
    h('h2', { id: `market-name-${e.id}` }, e.name),
    h('p', { class: 'hint' }, `${e.category} · ${e.source}${e.tags.length ? ` · ${e.tags.join(', ')}` : ''}`),
    e.description && h('p', {}, e.description),
    (e.url || e.docs_url) &&
      h(
        'p',
        {},
        e.url && h('a', { href: e.url, rel: 'noopener noreferrer', target: '_blank' }, 'Website'),
        e.url && e.docs_url ? ' · ' : '',
        e.docs_url && h('a', { href: e.docs_url, rel: 'noopener noreferrer', target: '_blank' }, 'Documentation'),
      ),
    toggle,
    endpoints,
  )
}

function endpointTable(e) {
  const rows = e.endpoints.map((ep) => {
    const method = ep.methods.includes('GET') ? 'GET' : ep.methods[0]
    const command = h('code', { class: 'command' }, fetchCommand(ep.url, method))
    const price = ep.pricing_config
    return h(
      'tr',
      {},
      h('td', {}, h('code', {}, ep.url), ep.description && h('div', { class: 'hint' }, ep.description)),
      h('td', {}, ep.methods.join(', ')),
      h('td', {}, `${units(price.amountAtomicUnit, 6)} ${price.currency}`),
      h('td', { class: 'command-cell' }, command, copyButton(command.textContent, command)),
    )
  })
  return table(['URL', 'Methods', 'Price per call', 'Call it with the CLI'], rows, 'No endpoints on this network.')
}

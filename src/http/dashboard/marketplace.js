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

/**
 * A made-up listing (the starter catalog's "(example)" entries, hosts under `.example`), as
 * src/services/marketplace/example-entry.ts decides: hidden unless asked for, never runnable.
 */
export function isExample(e) {
  if (e.source === 'platform') return false
  if (/\(example\)\s*$/i.test(e.name)) return true
  const exampleHost = (u) => {
    try {
      const host = new URL(u).hostname.toLowerCase()
      return host === 'example' || host.endsWith('.example')
    } catch {
      return false
    }
  }
  return e.endpoints.length > 0 && e.endpoints.every((ep) => exampleHost(ep.url))
}

/** "0.001 USDC" or "0.001–0.01 USDC" over an entry's endpoints. */
export function priceRange(e) {
  const usdc = e.endpoints.filter((ep) => ep.pricing_config.currency.toUpperCase() === 'USDC')
  if (!usdc.length) return ''
  const amounts = usdc.map((ep) => BigInt(ep.pricing_config.amountAtomicUnit))
  const lo = amounts.reduce((a, b) => (b < a ? b : a))
  const hi = amounts.reduce((a, b) => (b > a ? b : a))
  return lo === hi ? `${units(String(lo), 6)} USDC` : `${units(String(lo), 6)}–${units(String(hi), 6)} USDC`
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
  const examples = h('input', { id: 'market-examples', type: 'checkbox' })
  const results = h('div', { id: 'market-results' })
  const count = h('p', { id: 'market-count', role: 'status' })
  const hiddenNote = h('p', { id: 'market-hidden', class: 'hint' })
  let last = all
  const render = (listed) => {
    last = listed
    const entries = examples.checked ? listed : listed.filter((e) => !isExample(e))
    const hidden = listed.length - entries.length
    count.textContent = `${entries.length} ${entries.length === 1 ? 'entry' : 'entries'}`
    hiddenNote.textContent = hidden ? `${hidden} example ${hidden === 1 ? 'listing' : 'listings'} hidden` : ''
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
    h('label', { for: 'market-examples' }, examples, ' Include examples'),
    apply,
  )
  examples.addEventListener('change', () => render(last))
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
    hiddenNote,
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
    h('h2', { id: `market-name-${e.id}` }, e.name, isExample(e) && !/\(example\)/i.test(e.name) ? ' (example)' : ''),
    h(
      'p',
      { class: 'hint' },
      `${e.category} · ${e.source}${priceRange(e) ? ` · ${priceRange(e)}` : ''}${e.tags.length ? ` · ${e.tags.join(', ')}` : ''}`,
    ),
    isExample(e) &&
      h('p', { class: 'hint' }, 'An example listing: its hosts do not resolve, nothing here is callable.'),
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
  const example = isExample(e)
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
      example
        ? h('td', { class: 'command-cell' }, 'not callable (example)')
        : h('td', { class: 'command-cell' }, command, copyButton(command.textContent, command)),
    )
  })
  return table(['URL', 'Methods', 'Price per call', 'Call it with the CLI'], rows, 'No endpoints on this network.')
}
